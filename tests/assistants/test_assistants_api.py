"""The assistants' REST API (assistants/api.py): CRUD by the owner only, keys shown once and stored as their digest,
revoked at once, usage counted from real turns, KB retrieval keys by KB owners only, bad input refused with codes."""
from __future__ import annotations

import hashlib
import json

import pytest

from assistants.keys import key_authenticate
from assistants.models import ApiKey, Assistant
from core.errors import ApplicationError
from knowledge.models import Membership, Role

pytestmark = pytest.mark.django_db


def error_code(response) -> str:
    return response.json()["error"]["code"]


def test_the_owner_creates_lists_reads_changes_and_deletes_an_assistant(client_for, alice, docs_kb, make_kb):
    api = client_for(alice)
    other = make_kb(alice, "另一个库")
    made = api.post("/api/assistants/", {
        "name": "客服助手", "kb_ids": [other.pk, docs_kb.pk], "system_prompt": "你是客服。", "top_k": 4,
        "score_threshold": 0.2, "answer_threshold": 0.5, "suggested_questions": ["专业版多少钱？", "  "],
        "allowed_origins": ["https://Intranet.Example.com/"], "share_access": "public"}, format="json")
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["kb_ids"] == [other.pk, docs_kb.pk]  # in the order given
    assert body["allowed_origins"] == ["https://intranet.example.com"] and body["suggested_questions"] == ["专业版多少钱？"]
    assert body["share_path"].startswith("/s/") and body["top_k"] == 4
    listed = api.get("/api/assistants/").json()
    assert [a["id"] for a in listed["results"]] == [body["id"]] and listed["results"][0]["kb_ids"] == [other.pk, docs_kb.pk]

    changed = api.patch(f"/api/assistants/{body['id']}/", {"kb_ids": [docs_kb.pk], "top_k": None, "share_access": "off"},
                        format="json")
    assert changed.status_code == 200, changed.content
    assert (changed.json()["kb_ids"], changed.json()["top_k"], changed.json()["share_path"]) == ([docs_kb.pk], None, None)
    assert api.get(f"/api/assistants/{body['id']}/").json()["name"] == "客服助手"
    assert api.delete(f"/api/assistants/{body['id']}/").status_code == 204
    assert not Assistant.objects.filter(pk=body["id"]).exists()


def test_another_users_assistant_is_a_404_everywhere(client_for, bob, assistant):
    api = client_for(bob)
    base = f"/api/assistants/{assistant.pk}/"
    for response in (api.get(base), api.patch(base, {"name": "x"}, format="json"), api.delete(base),
                     api.get(base + "keys/"), api.post(base + "keys/", {}, format="json"), api.get(base + "usage/"),
                     api.post(base + "share/rotate/")):
        assert response.status_code == 404 and error_code(response) == "assistant_not_found"
    assert api.get("/api/assistants/").json()["results"] == []
    assert Assistant.objects.filter(pk=assistant.pk, name="产品助手").exists()


def test_a_kb_the_caller_cannot_read_is_refused(client_for, alice, bob, docs_kb, make_kb):
    bobs = make_kb(bob, "Bob KB")
    response = client_for(alice).post("/api/assistants/", {"name": "x", "kb_ids": [docs_kb.pk, bobs.pk]}, format="json")
    assert response.status_code == 404 and error_code(response) == "kb_not_found"
    assert not Assistant.objects.exists()


@pytest.mark.parametrize("body, status, code", [
    ({"kb_ids": [1]}, 400, "invalid"),                                   # no name
    ({"name": "x", "kb_ids": []}, 400, "invalid"),                       # no KB
    ({"name": "x", "kb_ids": "1"}, 400, "invalid"),
    ({"name": "x", "colour": "red"}, 400, "unknown_field"),
    ({"name": "x", "top_k": 0}, 400, "invalid"),
    ({"name": "x", "score_threshold": 1.5}, 400, "invalid"),
    ({"name": "x", "score_threshold": 0.6, "answer_threshold": 0.4}, 400, "invalid_threshold"),
    ({"name": "x", "allowed_origins": ["https://a.example.com/path"]}, 400, "invalid"),
    ({"name": "x", "suggested_questions": [1]}, 400, "invalid"),
    ({"name": "x", "share_access": "everyone"}, 400, "invalid"),
    ({"name": "x", "model": "no-such-model"}, 400, "unknown_answer_model"),
    ({"name": 7}, 400, "invalid"),
])
def test_bad_input_is_refused_with_a_code(client_for, alice, docs_kb, body, status, code):
    body = {"kb_ids": [docs_kb.pk], **body} if "kb_ids" not in body else body
    response = client_for(alice).post("/api/assistants/", body, format="json")
    assert (response.status_code, error_code(response)) == (status, code), response.content
    assert not Assistant.objects.exists()


def test_a_name_in_use_is_a_409_and_an_empty_patch_a_400(client_for, alice, assistant, docs_kb):
    api = client_for(alice)
    response = api.post("/api/assistants/", {"name": assistant.name, "kb_ids": [docs_kb.pk]}, format="json")
    assert (response.status_code, error_code(response)) == (409, "assistant_name_taken")
    response = api.patch(f"/api/assistants/{assistant.pk}/", {}, format="json")
    assert (response.status_code, error_code(response)) == (400, "nothing_to_update")


def test_a_key_is_shown_once_stored_as_its_digest_listed_by_prefix_and_revoked_at_once(client_for, alice, assistant):
    api = client_for(alice)
    created = api.post(f"/api/assistants/{assistant.pk}/keys/", {"name": "内网机器人", "rate_limit": 30}, format="json")
    assert created.status_code == 201, created.content
    key = created.json()["key"]
    assert key.startswith("zk-") and created.json()["prefix"] == key[:10] and created.json()["rate_limit"] == 30
    row = ApiKey.objects.get(pk=created.json()["id"])
    assert row.digest == hashlib.sha256(key.encode()).hexdigest()
    assert key not in json.dumps(list(ApiKey.objects.values()), default=str)  # only its digest is stored

    key_authenticate(key)  # it works, and its use is recorded
    listed = api.get(f"/api/assistants/{assistant.pk}/keys/")
    assert listed.status_code == 200
    [item] = listed.json()["results"]
    assert "key" not in item and key not in listed.content.decode()
    assert (item["name"], item["prefix"], item["kind"]) == ("内网机器人", key[:10], "assistant") and item["last_used_at"]

    assert api.delete(f"/api/assistants/{assistant.pk}/keys/{row.pk}/").status_code == 204
    with pytest.raises(ApplicationError) as refused:
        key_authenticate(key)
    assert refused.value.code == "key_invalid"
    assert api.get(f"/api/assistants/{assistant.pk}/keys/").json()["results"] == []
    again = api.delete(f"/api/assistants/{assistant.pk}/keys/{row.pk}/")
    assert (again.status_code, error_code(again)) == (404, "key_not_found")


def test_a_key_is_revoked_only_through_its_own_assistant(client_for, alice, assistant, docs_kb):
    from assistants.services import assistant_create, assistant_key_create

    other = assistant_create(owner=alice, name="另一个", kb_ids=[docs_kb.pk])
    row, _ = assistant_key_create(user=alice, assistant=other)
    response = client_for(alice).delete(f"/api/assistants/{assistant.pk}/keys/{row.pk}/")
    assert (response.status_code, error_code(response)) == (404, "key_not_found")
    assert ApiKey.objects.get(pk=row.pk).revoked_at is None


@pytest.mark.parametrize("body", [{"rate_limit": 0}, {"name": 5}, {"key": "zk-mine"}])
def test_bad_key_input_is_refused(client_for, alice, assistant, body):
    response = client_for(alice).post(f"/api/assistants/{assistant.pk}/keys/", body, format="json")
    assert response.status_code == 400 and error_code(response) in {"invalid", "unknown_field"}
    assert not ApiKey.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_usage_counts_the_assistants_turns_and_ratings(client_for, alice, assistant):
    import asyncio

    from assistants.services import assistant_turn_start
    from chat.models import Channel, Feedback
    from chat.services import turn_stream

    async def run(turn):
        return [event async for event in turn_stream(turn)]

    answered = asyncio.run(run(assistant_turn_start(assistant=assistant, question="知库专业版的价格是多少？", channel=Channel.TRY)))
    asyncio.run(run(assistant_turn_start(assistant=assistant, question="火星上的天气怎么样？", channel=Channel.API)))
    # A visitor's rating (the share and embed pages record them; the console's feedback is for one's own chats).
    Feedback.objects.create(user=alice, message_id=answered[-1]["message"], rating="up")
    api = client_for(alice)
    usage = api.get(f"/api/assistants/{assistant.pk}/usage/").json()
    assert usage["conversations"] == 2 and usage["questions"] == 2
    assert usage["conversations_by_channel"] == {"try": 1, "api": 1}
    assert usage["outcomes"]["not_found"] == 1 and usage["outcomes"]["answered"] + usage["outcomes"]["uncertain"] == 1
    assert usage["feedback"] == {"up": 1, "down": 0} and usage["tokens"] == {"prompt": 0, "completion": 0}
    later = api.get(f"/api/assistants/{assistant.pk}/usage/", {"since": "2999-01-01T00:00:00Z"}).json()
    assert (later["conversations"], later["questions"], later["since"]) == (0, 0, "2999-01-01T00:00:00Z")
    bad = api.get(f"/api/assistants/{assistant.pk}/usage/", {"since": "yesterday"})
    assert (bad.status_code, error_code(bad)) == (400, "invalid") and "since" in bad.json()["error"]["fields"]


def test_rotating_the_share_token_replaces_the_link(client_for, alice, assistant):
    from assistants.services import assistant_update

    assistant_update(assistant=assistant, user=alice, share_access="public")
    old = Assistant.objects.get(pk=assistant.pk).share_token
    response = client_for(alice).post(f"/api/assistants/{assistant.pk}/share/rotate/")
    assert response.status_code == 200
    new = response.json()["share_token"]
    assert new != old and response.json()["share_path"] == f"/s/{new}/"
    assert Assistant.objects.get(pk=assistant.pk).share_token == new


def test_kb_retrieval_keys_are_for_the_kbs_owners_only(client_for, alice, bob, make_user, docs_kb):
    carol = make_user("carol")
    Membership.objects.create(kb=docs_kb, user=bob, role=Role.EDITOR)
    url = f"/api/kbs/{docs_kb.pk}/keys/"
    refused = client_for(bob).post(url, {"name": "bob"}, format="json")
    assert (refused.status_code, error_code(refused)) == (403, "role_required")
    hidden = client_for(carol).get(url)
    assert (hidden.status_code, error_code(hidden)) == (404, "kb_not_found")

    api = client_for(alice)
    created = api.post(url, {"name": "Dify"}, format="json")
    assert created.status_code == 201, created.content
    key = created.json()["key"]
    assert created.json()["kind"] == "kb" and key_authenticate(key, kind="kb").kb_id == docs_kb.pk
    [item] = api.get(url).json()["results"]
    assert "key" not in item and item["prefix"] == key[:10]
    assert client_for(bob).delete(f"{url}{item['id']}/").status_code == 403
    assert api.delete(f"{url}{item['id']}/").status_code == 204
    with pytest.raises(ApplicationError):
        key_authenticate(key)


def test_anonymous_callers_are_refused(api_client, assistant):
    assert api_client.get("/api/assistants/").status_code == 401
    assert api_client.post(f"/api/assistants/{assistant.pk}/keys/", {}, format="json").status_code == 401
