"""Each recorded action writes one entry with its actor, client address, KB and changes (secrets masked).

The actions are made the way people make them: through the REST API (token authentication, so the actor
is known only once DRF has authenticated the request), the sign-in page and the model signals.
"""
from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group

from audit.models import AuditEntry
from core.audit import Action, record
from core.audit.context import acting, detect_process_origin
from knowledge.models import Document, DocumentStatus, KnowledgeBase

pytestmark = pytest.mark.django_db
ADDRESS = "203.0.113.7"


def only(action: str, **filters) -> AuditEntry:
    """The one entry of ``action`` (fails when there are none or several)."""
    found = list(AuditEntry.objects.filter(action=action, **filters))
    assert len(found) == 1, f"{action}: {len(found)} entries: {found}"
    return found[0]


@pytest.fixture
def api(client_for, alice):
    c = client_for(alice)
    c.defaults["REMOTE_ADDR"] = ADDRESS
    return c


def test_sign_in_and_failed_sign_in_on_the_login_page(client, alice):
    client.post("/accounts/login/", {"username": "alice", "password": "wrong"}, REMOTE_ADDR=ADDRESS)
    failed = only(Action.SIGN_IN_FAILED)
    assert failed.actor_id is None and failed.actor_name == "alice" and failed.address == ADDRESS
    assert "wrong" not in json.dumps(failed.changes)
    client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"}, REMOTE_ADDR=ADDRESS)
    signed_in = only(Action.SIGN_IN)
    assert (signed_in.actor, signed_in.address, signed_in.origin) == (alice, ADDRESS, "web")
    assert signed_in.changes == {"method": "password"}


def test_the_token_endpoint_records_the_sign_in_and_the_token(api_client, alice):
    response = api_client.post("/api/auth/token/", {"username": "alice", "password": "pw-alice", "name": "ci"},
                               format="json", REMOTE_ADDR=ADDRESS)
    assert response.status_code == 200
    key = response.json()["token"]
    assert only(Action.SIGN_IN).changes == {"method": "api_token"}
    created = only(Action.TOKEN_CREATE)
    assert (created.actor, created.address, created.object_id) == (alice, ADDRESS, str(response.json()["id"]))
    assert key not in json.dumps(created.changes) and key[:8] in created.object_repr
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api_client.delete(f"/api/auth/tokens/{response.json()['id']}/", REMOTE_ADDR=ADDRESS).status_code == 204
    revoked = only(Action.TOKEN_REVOKE)
    assert (revoked.actor, revoked.address, revoked.changes["name"]) == (alice, ADDRESS, "ci")


def test_kb_create_settings_and_delete(api, alice):
    kb_id = api.post("/api/kbs/", {"name": "Policies"}, format="json").json()["id"]
    created = only(Action.KB_CREATE)
    assert (created.actor, created.address, created.kb_id, created.kb_name) == (alice, ADDRESS, kb_id, "Policies")
    before = KnowledgeBase.objects.get(pk=kb_id).top_k
    api.patch(f"/api/kbs/{kb_id}/", {"top_k": before + 3, "name": "Policies 2"}, format="json")
    assert only(Action.KB_UPDATE).changes == {"top_k": [before, before + 3], "name": ["Policies", "Policies 2"]}
    api.patch(f"/api/kbs/{kb_id}/", {"top_k": before + 3}, format="json")  # no change: no entry
    assert AuditEntry.objects.filter(action=Action.KB_UPDATE).count() == 1
    assert api.delete(f"/api/kbs/{kb_id}/").status_code == 204
    deleted = only(Action.KB_DELETE)
    assert (deleted.kb_id, deleted.kb_name, deleted.changes["documents"]) == (kb_id, "Policies 2", 0)
    # The KB is gone; its entries are not.
    assert AuditEntry.objects.filter(kb_id=kb_id).count() == 3


def test_membership_add_change_remove(api, alice, bob, kb):
    member = api.post(f"/api/kbs/{kb.pk}/members/", {"username": "bob", "role": "viewer"}, format="json").json()
    added = only(Action.MEMBERSHIP_ADD)
    assert (added.actor, added.kb_id, added.object_repr, added.changes) == (alice, kb.pk, "bob", {"role": [None, "viewer"]})
    api.patch(f"/api/kbs/{kb.pk}/members/{member['id']}/", {"role": "editor"}, format="json")
    assert only(Action.MEMBERSHIP_CHANGE).changes == {"role": ["viewer", "editor"]}
    api.delete(f"/api/kbs/{kb.pk}/members/{member['id']}/")
    removed = only(Action.MEMBERSHIP_REMOVE)
    assert (removed.address, removed.changes) == (ADDRESS, {"role": ["editor", None]})


def test_group_changes_from_either_side(bob, make_user):
    staff = make_user("root", superuser=True)
    with acting(actor=staff, address="198.51.100.2"):
        finance = Group.objects.create(name="Finance")
        bob.groups.add(finance)
        finance.user_set.remove(bob)
        bob.groups.add(finance)
        bob.groups.clear()
        finance.name = "Finance & Legal"
        finance.save()
        finance.delete()
    assert only(Action.GROUP_CREATE).actor == staff
    adds = AuditEntry.objects.filter(action=Action.GROUP_MEMBER_ADD)
    removes = AuditEntry.objects.filter(action=Action.GROUP_MEMBER_REMOVE)
    assert [e.changes for e in adds] == [{"user": "bob"}] * 2 and [e.changes for e in removes] == [{"user": "bob"}] * 2
    assert only(Action.GROUP_UPDATE).changes == {"name": ["Finance", "Finance & Legal"]}
    assert only(Action.GROUP_DELETE).address == "198.51.100.2"


def test_document_upload_replace_restrict_reindex_retry_delete(api, alice, kb, ingest):
    assert api.post(f"/api/kbs/{kb.pk}/documents/", {"files": [_file("a.md", "# A\n\none")]},
                    format="multipart").status_code == 202
    uploaded = only(Action.DOCUMENT_UPLOAD)
    assert (uploaded.actor, uploaded.kb_id, uploaded.changes["source_name"], uploaded.changes["version"]) == (alice, kb.pk, "a.md", 1)
    api.post(f"/api/kbs/{kb.pk}/documents/", {"files": [_file("a.md", "# A\n\ntwo")]}, format="multipart")
    assert only(Action.DOCUMENT_REPLACE).changes["version"] == 2
    [ready] = ingest(kb, {"b.md": "# B\n\nthree"})
    Group.objects.create(name="Legal")
    api.patch(f"/api/kbs/{kb.pk}/documents/{ready.pk}/", {"restricted_to_groups": ["Legal"]}, format="json")
    assert only(Action.DOCUMENT_RESTRICT).changes == {"restricted_to_groups": [[], ["Legal"]]}
    api.post(f"/api/kbs/{kb.pk}/documents/{ready.pk}/reindex/")
    assert only(Action.DOCUMENT_REINDEX).changes == {"version": [1, 2]}
    Document.objects.filter(pk=uploaded.object_id).update(status=DocumentStatus.FAILED)
    api.post(f"/api/kbs/{kb.pk}/documents/{uploaded.object_id}/retry/")
    assert only(Action.DOCUMENT_RETRY).object_id == uploaded.object_id
    assert api.delete(f"/api/kbs/{kb.pk}/documents/{ready.pk}/").status_code == 204
    deleted = only(Action.DOCUMENT_DELETE)
    assert (deleted.actor, deleted.address, deleted.object_repr, deleted.changes["source_name"]) == (alice, ADDRESS, "b.md v1", "b.md")


def test_chunk_edit_records_the_text_before_and_after(api, kb, ingest):
    [document] = ingest(kb, {"c.md": "# C\n\nThe old text."})
    chunk = document.chunks.get()
    api.patch(f"/api/kbs/{kb.pk}/chunks/{chunk.pk}/", {"content": "The new text.", "enabled": False}, format="json")
    edited = only(Action.CHUNK_EDIT)
    assert edited.kb_id == kb.pk and edited.changes["enabled"] == [True, False]
    assert edited.changes["content"][1] == "The new text." and "old text" in edited.changes["content"][0]


def test_assistant_and_key_lifecycle(api, alice, kb):
    assistant = api.post("/api/assistants/", {"name": "Helpdesk", "kb_ids": [kb.pk]}, format="json").json()
    assert only(Action.ASSISTANT_CREATE).actor == alice
    api.patch(f"/api/assistants/{assistant['id']}/", {"name": "Help desk"}, format="json")
    assert only(Action.ASSISTANT_UPDATE).changes == {"name": ["Helpdesk", "Help desk"]}
    key = api.post(f"/api/assistants/{assistant['id']}/keys/", {"name": "site"}, format="json").json()
    kb_key = api.post(f"/api/kbs/{kb.pk}/keys/", {"name": "dify"}, format="json").json()
    created = AuditEntry.objects.filter(action=Action.KEY_CREATE).order_by("id")
    assert [(e.kb_id, e.changes["kind"]) for e in created] == [(None, "assistant"), (kb.pk, "kb")]
    assert not any(k["key"] in json.dumps(e.changes) + e.object_repr for k in (key, kb_key) for e in created)
    api.delete(f"/api/kbs/{kb.pk}/keys/{kb_key['id']}/")
    assert only(Action.KEY_REVOKE).kb_id == kb.pk
    api.delete(f"/api/assistants/{assistant['id']}/")
    assert only(Action.ASSISTANT_DELETE).changes["name"] == "Help desk"


def test_model_endpoint_changes_never_hold_the_key(client_for, make_user):
    staff = make_user("root", superuser=True)
    api = client_for(staff)
    secret = "sk-very-secret-0123456789"
    endpoint = api.post("/api/model-endpoints/", {"name": "deepseek", "kind": "deepseek", "api_key": secret,
                                                  "model_names": ["deepseek-chat"]}, format="json").json()
    api.patch(f"/api/model-endpoints/{endpoint['id']}/", {"api_key": secret + "2", "enabled": False}, format="json")
    api.delete(f"/api/model-endpoints/{endpoint['id']}/")
    entries = AuditEntry.objects.filter(action__startswith="model_endpoint.")
    assert [e.action for e in entries.order_by("id")] == [Action.ENDPOINT_CREATE, Action.ENDPOINT_UPDATE, Action.ENDPOINT_DELETE]
    assert only(Action.ENDPOINT_UPDATE).changes == {"enabled": [True, False], "api_key": ["***", "***"]}
    stored = json.dumps([e.changes for e in entries])
    assert secret not in stored and "gAAAA" not in stored  # neither the key nor its Fernet token


def test_account_flags_and_deletion(make_user, bob):
    staff = make_user("root", superuser=True)
    with acting(actor=staff):
        bob.is_staff = True
        bob.save()
        bob.save(update_fields=["last_login"])  # a sign-in's write: not a flag change
        bob.delete()
    assert only(Action.USER_UPDATE, actor=staff).changes == {"is_staff": [False, True]}
    assert only(Action.USER_DELETE).object_repr == "bob"
    assert only(Action.USER_CREATE, object_repr="bob").changes == {"is_active": True, "is_staff": False, "is_superuser": False}


def test_an_entry_for_a_change_that_rolled_back_is_gone_with_it(api, kb):
    response = api.patch(f"/api/kbs/{kb.pk}/", {"top_k": 7, "score_threshold": 2.5}, format="json")
    assert response.status_code == 400
    assert not AuditEntry.objects.filter(action=Action.KB_UPDATE).exists()


def test_management_commands_are_marked_cli():
    try:
        assert detect_process_origin(["manage.py", "audit_purge"]) == "cli"
        entry = record(Action.DEFAULT_MODEL_SET, changes={"default": ["", "x"]})
        assert (entry.origin, entry.actor_id, entry.address) == ("cli", None, None)
        assert detect_process_origin(["manage.py", "runserver"]) == "system"
    finally:
        detect_process_origin()


def _file(name: str, text: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, text.encode(), content_type="text/markdown")


def test_secret_named_values_are_masked_at_any_depth():
    entry = record(Action.USER_UPDATE, changes={
        "password": ["old-pw", "new-pw"], "bind_password": "x", "share_token": "t0k", "top_k": [5, 8],
        "settings": {"api_key": "sk-1", "name": "n"}, "monkey": "not a secret", "words": list(range(150))})
    assert entry.changes["password"] == ["***", "***"] and entry.changes["bind_password"] == "***"
    assert entry.changes["share_token"] == "***" and entry.changes["settings"] == {"api_key": "***", "name": "n"}
    assert entry.changes["top_k"] == [5, 8] and entry.changes["monkey"] == "not a secret"
    assert len(entry.changes["words"]) == 101 and entry.changes["words"][-1] == "…"
    assert not {"old-pw", "new-pw", "sk-1", "t0k"} & set(json.dumps(entry.changes).replace('"', " ").split())
