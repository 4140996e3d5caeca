"""A chat turn: one check of the question and its KBs (shared with search), KBs looked up once, one not-found rule."""
from __future__ import annotations

import pytest
from chat_helpers import DOCS
from test_chat_answer_settings import ask

from chat import services as chat_services
from core.errors import ValidationFailed
from knowledge.services import search as search_service
from knowledge.services.query_input import MAX_KBS, MAX_QUERY_CHARS
from tests.helpers import searched

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize(("question", "kb_ids", "code"), [
    ("   ", [1], "empty_question"),
    ("价" * (MAX_QUERY_CHARS + 1), [1], "question_too_long"),
    ("价格", "1", "invalid_kb_ids"),
    ("价格", [True], "invalid_kb_ids"),
    ("价格", list(range(1, MAX_KBS + 2)), "too_many_kbs"),
    ("价格", [], "no_kbs"),
])
def test_a_turn_and_a_search_refuse_bad_input_with_the_same_code(alice, question, kb_ids, code):
    with pytest.raises(ValidationFailed) as turn:
        chat_services.turn_start(user=alice, conversation_id=None, kb_ids=kb_ids, question=question)
    with pytest.raises(ValidationFailed) as search:
        searched(user=alice, query=question, kb_ids=kb_ids)
    assert turn.value.code == search.value.code == code
    assert turn.value.message == search.value.message


async def test_a_turn_looks_up_each_kb_once(chat_kb, make_kb, alice, alice_token, monkeypatch):
    other = await chat_services.in_thread(make_kb)(alice, "second")
    looked_up: list[int] = []

    def counting(lookup):
        def run(*, user, kb_ids, **kwargs):
            looked_up.append(list(kb_ids))
            return lookup(user=user, kb_ids=kb_ids, **kwargs)
        return run

    # One resolve-and-check of both KBs per turn (one statement); the search reuses it and its scope.
    monkeypatch.setattr(chat_services, "kbs_get_for_user", counting(chat_services.kbs_get_for_user))
    monkeypatch.setattr(search_service, "kbs_get_for_user", counting(search_service.kbs_get_for_user))
    monkeypatch.setattr(search_service, "scope_for", lambda **kw: pytest.fail("the turn's scope is read again"))
    events = await ask([chat_kb.pk, other.pk], alice_token)
    assert events[-1]["type"] == "finish" and events[-1]["hit"] is True
    assert looked_up == [[chat_kb.pk, other.pk]]


async def test_not_found_shows_the_first_kbs_text_whichever_kb_decided(make_kb, alice, alice_token, ingest):
    @chat_services.in_thread
    def kbs():
        first = make_kb(alice, "empty", not_found_text="甲库没有答案。")
        decided = make_kb(alice, "docs", not_found_text="乙库没有答案。", score_threshold=0.99, answer_threshold=0.99)
        ingest(decided, DOCS)
        return first, decided

    first, decided = await kbs()
    events = await ask([first.pk, decided.pk], alice_token, question="员工的年假有几天？")
    finish = events[-1]
    assert (finish["hit"], finish["not_found_by"], finish["answer"]) == (False, "retrieval", "甲库没有答案。")


def test_a_chat_source_and_a_search_result_are_one_shape(chat_kb, alice):
    from chat.prompts import context_build
    from knowledge.services.search import payload

    result = searched(user=alice, query="知库专业版的价格是多少？", kb_ids=[chat_kb.pk])
    found = payload(result)["results"][0]
    source = context_build(result.candidates[:1]).sources[0].payload()
    assert set(source["scores"]) == set(found["scores"]) and source["scores"] == found["scores"]
    assert {k: source[k] for k in ("chunk_id", "kb_id", "section_path", "pages", "chunk_type")} == \
        {k: found[k] for k in ("chunk_id", "kb_id", "section_path", "pages", "chunk_type")}
    assert source["document"].items() <= found["document"].items()
