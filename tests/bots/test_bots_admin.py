"""Channels in the Django admin: listed for staff, never showing a secret, not changeable there, and removed through
the service so the removal is audited."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client, django_user_model):
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw-Root-12345")
    client.force_login(admin)
    return client


def test_channels_are_listed_without_secrets_and_removed_with_an_audit_entry(staff_client, channel):
    from audit.models import AuditEntry
    from bots.models import BotChannel
    from tests.bots.conftest import FEISHU_TOKEN

    feishu = channel("feishu")
    page = staff_client.get("/admin/bots/botchannel/")
    assert page.status_code == 200 and feishu.name in page.content.decode()
    detail = staff_client.get(f"/admin/bots/botchannel/{feishu.pk}/change/")
    assert detail.status_code == 200
    body = detail.content.decode()
    assert FEISHU_TOKEN not in body and feishu.credentials not in body
    assert staff_client.post(f"/admin/bots/botchannel/{feishu.pk}/change/", {"name": "x"}).status_code == 403

    assert staff_client.post(f"/admin/bots/botchannel/{feishu.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not BotChannel.objects.filter(pk=feishu.pk).exists()
    assert AuditEntry.objects.filter(action="bot_channel.delete", object_id=str(feishu.pk)).exists()
