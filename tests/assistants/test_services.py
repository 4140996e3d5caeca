"""Assistants and their keys (assistants/services.py, keys.py): settings checked, access re-checked at each
request against what the owner may read now, keys stored hashed and refused once revoked, a per-key budget."""
from __future__ import annotations

import asyncio
import hashlib
import json

import pytest
from django.core.management import call_command

from assistants.keys import bearer_key, key_authenticate, key_digest, key_revoke
from assistants.models import ApiKey
from assistants.services import (
    assistant_create,
    assistant_kbs,
    assistant_key_create,
    assistant_turn_start,
    assistant_update,
    kb_key_create,
    key_search,
)
from assistants.usage import assistant_usage
from chat.models import Channel, Conversation, Message
from chat.selectors import conversation_list
from chat.services import turn_stream
from core.errors import ApplicationError
from knowledge.models import Membership, Role
from knowledge.retrieval.request import SearchRequest

pytestmark = pytest.mark.django_db


def code_of(call) -> str:
    with pytest.raises(ApplicationError) as caught:
        call()
    return caught.value.code


def test_an_assistant_binds_only_kbs_its_owner_can_read(alice, bob, docs_kb, make_kb):
    bobs = make_kb(bob, "Bob KB")
    assert code_of(lambda: assistant_create(owner=alice, name="x", kb_ids=[docs_kb.pk, bobs.pk])) == "kb_not_found"
    assert code_of(lambda: assistant_create(owner=alice, name="x", kb_ids=[])) == "assistant_no_kbs"
    made = assistant_create(owner=alice, name="x", kb_ids=[docs_kb.pk], top_k=3, score_threshold=0.2, answer_threshold=0.5)
    assert made.kb_ids() == [docs_kb.pk]
    assert code_of(lambda: assistant_create(owner=alice, name="x", kb_ids=[docs_kb.pk])) == "assistant_name_taken"


@pytest.mark.parametrize("values, code", [
    ({"top_k": 0}, "invalid_top_k"),
    ({"score_threshold": 1.5}, "invalid_threshold"),
    ({"score_threshold": 0.6, "answer_threshold": 0.4}, "invalid_threshold"),
    ({"allowed_origins": ["https://a.example.com/path"]}, "invalid_assistant"),
    ({"allowed_origins": "https://a.example.com"}, "invalid_assistant"),
    ({"suggested_questions": [1, 2]}, "invalid_assistant"),
    ({"share_access": "everyone"}, "invalid_assistant"),
    ({"model": "no-such-model"}, "unknown_answer_model"),
    ({"colour": "red"}, "unknown_field"),
])
def test_bad_settings_are_refused_with_a_code(alice, docs_kb, values, code):
    assert code_of(lambda: assistant_create(owner=alice, name="x", kb_ids=[docs_kb.pk], **values)) == code


def test_origins_are_kept_exactly_lowercased_without_a_trailing_slash(alice, docs_kb):
    made = assistant_create(owner=alice, name="x", kb_ids=[docs_kb.pk],
                            allowed_origins=["https://Intranet.Example.com/", "http://127.0.0.1:8080"])
    assert made.allowed_origins == ["https://intranet.example.com", "http://127.0.0.1:8080"]


def test_a_kb_the_owner_loses_is_gone_from_the_assistant_at_the_next_request(alice, bob, docs_kb, make_kb, ingest):
    shared = make_kb(bob, "Bob 共享")
    ingest(shared, {"faq.md": "# 报销\n\n差旅报销须在出差结束后 30 天内提交。\n"})
    Membership.objects.create(kb=shared, user=alice, role=Role.VIEWER)
    made = assistant_create(owner=alice, name="两库", kb_ids=[shared.pk, docs_kb.pk])
    assert [kb.pk for kb in assistant_kbs(made)[0]] == [shared.pk, docs_kb.pk]
    Membership.objects.filter(kb=shared, user=alice).delete()
    assert [kb.pk for kb in assistant_kbs(made)[0]] == [docs_kb.pk]
    docs_kb.delete()
    assert code_of(lambda: assistant_kbs(made)) == "assistant_unavailable"


def test_keys_are_stored_as_their_digest_shown_once_and_refused_once_revoked(alice, assistant):
    row, key = assistant_key_create(user=alice, assistant=assistant, name="ci")
    assert key.startswith("zk-") and len(key) > 40
    stored = ApiKey.objects.get(pk=row.pk)
    assert stored.digest == hashlib.sha256(key.encode()).hexdigest() == key_digest(key)
    assert key not in json.dumps([list(r) for r in ApiKey.objects.values_list()], default=str)
    assert key_authenticate(key).assistant == assistant
    assert ApiKey.objects.get(pk=row.pk).last_used_at is not None
    key_revoke(key=stored)
    assert code_of(lambda: key_authenticate(key)) == "key_invalid"
    assert code_of(lambda: key_authenticate(key + "x")) == "key_invalid"


def test_a_key_of_an_inactive_owner_is_refused(alice, assistant):
    _, key = assistant_key_create(user=alice, assistant=assistant)
    alice.is_active = False
    alice.save()
    assert code_of(lambda: key_authenticate(key)) == "key_invalid"


def test_a_key_is_used_only_where_its_kind_belongs(alice, assistant, docs_kb):
    _, kb_key = kb_key_create(user=alice, kb_id=docs_kb.pk)
    assert code_of(lambda: key_authenticate(kb_key, kind="assistant")) == "key_wrong_kind"
    assert key_authenticate(kb_key, kind="kb").kb == docs_kb


def test_only_a_kbs_owner_issues_its_keys(alice, bob, docs_kb):
    Membership.objects.create(kb=docs_kb, user=bob, role=Role.EDITOR)
    assert code_of(lambda: kb_key_create(user=bob, kb_id=docs_kb.pk)) == "role_required"


@pytest.mark.parametrize("header", ["", "Token abc", "Bearer ", "Basic eA=="])
def test_anything_but_a_bearer_header_is_key_missing(header):
    assert code_of(lambda: bearer_key(header)) == "key_missing"


def test_a_key_over_its_budget_is_throttled_until_the_next_minute(alice, assistant, settings):
    row, key = assistant_key_create(user=alice, assistant=assistant, rate_limit=3)
    for _ in range(3):
        key_authenticate(key)
    with pytest.raises(ApplicationError) as caught:
        key_authenticate(key)
    assert caught.value.code == "key_rate_limited" and caught.value.status_code == 429
    assert 1 <= caught.value.extra["retry_after"] <= 60


def test_a_kb_key_searches_what_its_creator_may_read_now(alice, bob, docs_kb, make_kb, ingest):
    row, key = kb_key_create(user=alice, kb_id=docs_kb.pk)
    found = key_search(key_authenticate(key), SearchRequest(query="专业版多少钱"))
    assert found.candidates and "9800" in found.candidates[0].content
    other = make_kb(alice, "另一个")
    assert code_of(lambda: key_search(row, SearchRequest(query="价格"), kb_ids=[other.pk])) == "kb_not_found"
    shared = make_kb(bob, "Bob 共享")
    ingest(shared, {"faq.md": "# 报销\n\n差旅报销须在出差结束后 30 天内提交。\n"})
    Membership.objects.create(kb=shared, user=alice, role=Role.OWNER)
    shared_row, shared_key = kb_key_create(user=alice, kb_id=shared.pk)
    assert key_search(shared_row, SearchRequest(query="差旅报销什么时候提交")).candidates
    Membership.objects.filter(kb=shared, user=alice).delete()
    assert code_of(lambda: key_search(shared_row, SearchRequest(query="差旅报销什么时候提交"))) == "kb_not_found"


@pytest.mark.django_db(transaction=True)
def test_an_assistant_turn_answers_with_its_settings_and_counts_in_its_usage(alice, assistant):
    assistant_update(assistant=assistant, user=alice, not_found_text="助手没有找到答案。", top_k=2)
    turn = assistant_turn_start(assistant=assistant, question="知库专业版的价格是多少？", channel=Channel.API)
    assert turn.search_overrides == {"top_k": 2} and turn.user == alice

    async def run(t):
        return [e async for e in turn_stream(t)]

    events = asyncio.run(run(turn))
    finish = events[-1]
    assert finish["type"] == "finish" and "9800" in finish["answer"] and finish["citations"]
    missing = assistant_turn_start(assistant=assistant, question="火星上的天气怎么样？", channel=Channel.API)
    assert asyncio.run(run(missing))[-1]["answer"] == "助手没有找到答案。"
    conversation = Conversation.objects.get(pk=turn.conversation_id)
    assert conversation.assistant == assistant and conversation.channel == "api"
    assert not conversation_list(user=alice).filter(pk=conversation.pk).exists()  # not among her own chats
    usage = assistant_usage(assistant)
    assert usage["questions"] == 2 and usage["conversations"] == 2
    assert usage["outcomes"]["answered"] + usage["outcomes"]["uncertain"] == 1 and usage["outcomes"]["not_found"] == 1
    assert Message.objects.filter(conversation__assistant=assistant).count() == 4


def test_a_client_sent_history_is_the_turns_history(alice, assistant):
    turn = assistant_turn_start(assistant=assistant, question="那安装需要什么？", channel=Channel.API,
                                history=[("user", "专业版多少钱？"), ("assistant", "每年 9800 元。"), ("system", "ignored")])
    assert turn.history == [("user", "专业版多少钱？"), ("assistant", "每年 9800 元。")]


def test_a_conversation_continues_only_for_its_own_visitor(alice, assistant):
    first = assistant_turn_start(assistant=assistant, question="专业版多少钱？", channel=Channel.SHARE, visitor="v1")
    assert code_of(lambda: assistant_turn_start(assistant=assistant, question="再说一遍", channel=Channel.SHARE,
                                                visitor="v2", conversation_id=first.conversation_id)) == "conversation_not_found"
    again = assistant_turn_start(assistant=assistant, question="再说一遍", channel=Channel.SHARE, visitor="v1",
                                 conversation_id=first.conversation_id)
    assert again.conversation_id == first.conversation_id


def test_management_commands_print_one_json_line_with_a_working_key(alice, docs_kb, capsys):
    call_command("assistant_create", owner="alice", kb=["产品文档"], name="命令助手")
    made = json.loads(capsys.readouterr().out.strip())
    assert key_authenticate(made["key"]).assistant_id == made["id"]
    call_command("kb_key_create", owner="alice", kb="产品文档")
    kb_made = json.loads(capsys.readouterr().out.strip())
    assert kb_made["kb_id"] == docs_kb.pk and key_authenticate(kb_made["key"], kind="kb").kb_id == docs_kb.pk
