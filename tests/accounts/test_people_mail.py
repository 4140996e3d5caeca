"""Invitation and reset e-mail through Django's SMTP backend to a real SMTP server on loopback (aiosmtpd), and the
502 ``email_failed`` answer when the server cannot be reached."""
from __future__ import annotations

import email
from email.policy import default as default_policy

import pytest

from tests.browser import free_port

aiosmtpd = pytest.importorskip("aiosmtpd")

pytestmark = pytest.mark.django_db


class Inbox:
    """An aiosmtpd handler keeping every message it is given."""

    def __init__(self):
        self.messages: list = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append((envelope.rcpt_tos, email.message_from_bytes(envelope.content, policy=default_policy)))
        return "250 OK"


@pytest.fixture
def smtp(settings):
    from aiosmtpd.controller import Controller

    inbox, port = Inbox(), free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", port, 5
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.ZHIKU_EMAIL_ENABLED = True
    settings.DEFAULT_FROM_EMAIL = "zhiku@example.com"
    yield inbox, controller
    controller.stop()


def test_an_invitation_is_mailed_over_smtp(smtp, client_for, alice, kb):
    inbox, _ = smtp
    r = client_for(alice).post("/api/people/invitations/", {
        "email": "new@example.com", "send": True, "roles": [{"kb_id": kb.pk, "role": "viewer"}]}, format="json")
    assert r.status_code == 201 and r.json()["sent"] is True
    ((to, message),) = inbox.messages
    assert to == ["new@example.com"] and message["From"] == "zhiku@example.com"
    assert message["Subject"] == "邀请你加入知库"
    body = message.get_content()
    assert r.json()["url"] in body and "Alice KB" in body


def test_a_reset_link_is_mailed_in_english_on_request(smtp, client_for, make_user, bob):
    inbox, _ = smtp
    staff = make_user("staff")
    staff.is_staff = True
    staff.save()
    bob.email = "bob@example.com"
    bob.save()
    r = client_for(staff).post(f"/api/people/users/{bob.pk}/password/", {"send": True}, format="json",
                               HTTP_ACCEPT_LANGUAGE="en")
    assert r.status_code == 200 and r.json()["sent"] is True
    ((to, message),) = inbox.messages
    assert to == ["bob@example.com"] and message["Subject"] == "Set your Zhiku password"
    assert r.json()["reset_url"] in message.get_content()


def test_an_unreachable_mail_server_is_a_502_and_nothing_is_made(smtp, settings, client_for, alice, kb):
    from accounts.models import Invitation

    settings.EMAIL_PORT = free_port()  # nothing listens there
    r = client_for(alice).post("/api/people/invitations/", {
        "email": "new@example.com", "send": True, "roles": [{"kb_id": kb.pk, "role": "viewer"}]}, format="json")
    assert r.status_code == 502 and r.json()["error"]["code"] == "email_failed"
    assert not Invitation.objects.exists()  # a link nobody was shown is not kept
