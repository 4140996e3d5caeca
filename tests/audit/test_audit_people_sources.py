"""Sources, group managers, invitations and administrators' password changes are recorded too: who, which KB, what."""
from __future__ import annotations

import json

import pytest

from accounts.people.groups import group_manager_add, group_manager_remove
from accounts.people.invitations import Grant, invitation_accept_new, invitation_create, invitation_revoke
from accounts.people.users import user_set_password
from audit.models import AuditEntry
from core.audit import Action
from knowledge.models import Role
from tests.sources.memory_kind import SITES, MemorySite

pytestmark = pytest.mark.django_db
ADDRESS = "203.0.113.9"


def only(action: str, **filters) -> AuditEntry:
    found = list(AuditEntry.objects.filter(action=action, **filters))
    assert len(found) == 1, f"{action}: {len(found)} entries: {found}"
    return found[0]


def test_a_sources_life_through_the_api_is_recorded_without_its_credentials(client_for, alice, kb):
    SITES["audit"] = MemorySite(items={"a": ("audit-a.md", "# A\n\n七天无理由退货。")})
    api = client_for(alice)
    api.defaults["REMOTE_ADDR"] = ADDRESS
    created = api.post(f"/api/kbs/{kb.pk}/sources/", {"kind": "memtest", "name": "站点", "settings": {"site": "audit"}},
                       format="json")
    assert created.status_code == 201, created.content
    source_id = created.json()["id"]
    entry = only(Action.SOURCE_CREATE)
    assert (entry.actor, entry.address, entry.kb_id, entry.object_id) == (alice, ADDRESS, kb.pk, str(source_id))
    assert entry.changes["kind"] == [None, "memtest"] and entry.changes["name"] == [None, "站点"]

    changed = api.patch(f"/api/sources/{source_id}/", {"paused": True, "credentials": {"token": "s3cret-value"}},
                        format="json")
    assert changed.status_code in (200, 400), changed.content  # the memory kind may take no credentials
    if changed.status_code == 200:
        update = only(Action.SOURCE_UPDATE)
        assert update.changes["paused"] == [False, True] and "s3cret-value" not in json.dumps(update.changes)

    run = api.post(f"/api/sources/{source_id}/run/", format="json")
    assert run.status_code == 202, run.content
    started = only(Action.SOURCE_RUN)
    assert started.actor == alice and started.changes["trigger"] == [None, "manual"]

    assert api.delete(f"/api/sources/{source_id}/").status_code == 204
    removed = only(Action.SOURCE_DELETE)
    assert (removed.actor, removed.kb_id, removed.object_id) == (alice, kb.pk, str(source_id))


def test_group_managers_invitations_and_password_changes(alice, bob, kb, django_user_model):
    from django.contrib.auth.models import Group

    staff = django_user_model.objects.create_user(username="root", password="pw-root-1234", is_staff=True)
    group = Group.objects.create(name="客服组")
    group_manager_add(group=group, user=bob)
    group_manager_add(group=group, user=bob)  # already one: nothing new happened
    assert only(Action.GROUP_MANAGER_ADD).changes == {"manager": [None, "bob"]}
    group_manager_remove(group=group, user=bob)
    assert only(Action.GROUP_MANAGER_REMOVE).object_id == str(group.pk)

    invitation, token = invitation_create(actor=alice, grants=[Grant(kb=kb, role=Role.VIEWER)], email="new@example.com")
    made = only(Action.INVITATION_CREATE)
    assert (made.actor, made.kb_id, made.changes["role"]) == (alice, kb.pk, [None, "viewer"])
    assert token not in json.dumps(made.changes)
    newcomer = invitation_accept_new(token=token, username="newcomer", password="Zk-long-passw0rd")
    accepted = only(Action.INVITATION_ACCEPT)
    assert (accepted.actor, accepted.kb_id, accepted.changes) == (newcomer, kb.pk, {"role": [None, "viewer"]})

    second, _ = invitation_create(actor=alice, grants=[Grant(kb=kb, role=Role.EDITOR)])
    invitation_revoke(invitation=second)
    assert only(Action.INVITATION_REVOKE).object_id == str(second.pk)

    user_set_password(actor=staff, user=bob, password="An0ther-long-pass")
    changed = only(Action.USER_PASSWORD_SET)
    assert (changed.actor, changed.object_id) == (staff, str(bob.pk))
    assert "An0ther-long-pass" not in json.dumps(changed.changes)
