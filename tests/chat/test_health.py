"""The KB health page's API: questions asked in chat (the real websocket) show up at once, grouped; its one-click
actions (an FAQ entry answers the question afterwards; a labelled passage is a labelled question); owners only."""
from __future__ import annotations

import pytest
from chat_helpers import DOCS, connect, receive_until_end
from django.test import Client

from chat.health import normalise
from chat.models import Feedback
from chat.services import in_thread
from knowledge.models import Chunk, Document, EvalQuestion, Role
from knowledge.services.faq import FAQ_SOURCE_NAME
from knowledge.services.kbs import membership_set

# No reader: a first turn would load it (seconds) under the websocket's receive timeout; the verdicts here are the judge's.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("judge_only")]

MISSING = "公司年会在哪里举办？"
ANSWER = "公司年会每年十二月在杭州西湖国宾馆举办。"


async def ask(token: str, kb_ids: list[int], question: str) -> dict:
    communicator, connected = await connect(f"/ws/chat/?token={token}")
    assert connected
    await communicator.send_json_to({"type": "ask", "conversation": None, "kb_ids": kb_ids, "question": question})
    events = await receive_until_end(communicator)
    await communicator.disconnect()
    assert events[-1]["type"] == "finish", events[-1]
    return {**events[-1], "message_id": events[0]["message"]}


@in_thread
def health(user, kb_id: int, query: str = ""):
    client = Client()
    client.force_login(user)
    return client.get(f"/api/kbs/{kb_id}/health/{query}")


@in_thread
def post(user, path: str, body: dict):
    client = Client()
    client.force_login(user)
    return client.post(path, body, content_type="application/json")


def test_normalise_groups_spelling_variants():
    assert normalise("公司年会在哪里举办？") == normalise(" 公司年会在哪里举办 ") == normalise("公司年会在哪里举办?")
    assert normalise("ＡＢＣ  价格？") == "abc 价格"
    assert normalise("年假") != normalise("年终奖")


async def test_a_not_found_question_is_listed_at_once_and_an_faq_entry_answers_it(judged_kb, alice, alice_token):
    kb = judged_kb
    first = await ask(alice_token, [kb.pk], MISSING)
    assert first["verdict"] == "not_found"
    await ask(alice_token, [kb.pk], "公司年会在哪里举办")  # the same question, worded without the mark
    answered = await ask(alice_token, [kb.pk], "知库专业版的价格是多少？")
    assert answered["verdict"] == "answered"

    response = await health(alice, kb.pk)
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["turns"] == 3 and data["verdicts"]["not_found"] == 2 and data["verdicts"]["answered"] == 1
    [row] = [r for r in data["failing"] if r["key"] == normalise(MISSING)]
    assert (row["count"], row["not_found"], row["uncertain"]) == (2, 2, 0)
    assert row["question"] == "公司年会在哪里举办" and row["last_asked"]  # the latest wording
    assert all("价格" not in r["question"] for r in data["failing"])  # an answered question is not failing
    assert data["most_asked"][0]["key"] == normalise(MISSING) and data["most_asked"][0]["count"] == 2

    response = await post(alice, f"/api/kbs/{kb.pk}/health/faq/", {"question": MISSING, "answer": ANSWER})
    assert response.status_code == 201, response.content
    chunk = await in_thread(Chunk.objects.select_related("document").get)(pk=response.json()["chunk_id"])
    assert chunk.chunk_type == "faq" and chunk.document.source_name == FAQ_SOURCE_NAME
    assert chunk.metadata["question"] == MISSING and chunk.question_embedding is not None

    after = await ask(alice_token, [kb.pk], MISSING)
    assert after["verdict"] == "answered", after
    assert "西湖国宾馆" in after["answer"]
    again = (await health(alice, kb.pk)).json()
    [row] = [r for r in again["failing"] if r["key"] == normalise(MISSING)]
    assert (row["count"], row["answered"]) == (3, 1)


async def test_the_faq_document_reindexes_to_the_same_entries(judged_kb, alice):
    kb = judged_kb
    for question, answer in ((MISSING, ANSWER), ("停车场在哪里？", "停车场在园区东门，员工免费。")):
        response = await post(alice, f"/api/kbs/{kb.pk}/health/faq/", {"question": question, "answer": answer})
        assert response.status_code == 201, response.content

    @in_thread
    def parsed():
        from knowledge.parsers import parse_file

        document = Document.objects.get(kb=kb, source_name=FAQ_SOURCE_NAME)
        with document.file.open("rb") as f:
            data = f.read()
        return document, [b.meta.get("question") for b in parse_file(FAQ_SOURCE_NAME, data).blocks if b.kind == "faq"]

    document, questions = await parsed()
    assert questions == [MISSING, "停车场在哪里？"]
    assert (document.chunks_total, document.chunks_done, document.status) == (2, 2, "ready")


async def test_labelling_the_right_passage_stores_a_labelled_question(uncertain_kb, alice, alice_token, bob_kb):
    kb = uncertain_kb
    question = "专业版一年多少钱"
    assert (await ask(alice_token, [kb.pk], question))["verdict"] == "uncertain"
    [row] = (await health(alice, kb.pk)).json()["failing"]
    assert row["uncertain"] == 1 and row["passages"] and row["best_passage"] == row["passages"][0]
    passage = row["passages"][0]
    assert passage["chunk_id"] and passage["title"] and passage["content"]

    url = f"/api/kbs/{kb.pk}/health/labels/"
    response = await post(alice, url, {"question": question, "chunk_id": passage["chunk_id"], "answer": "9800 元"})
    assert response.status_code == 201, response.content
    labelled = await in_thread(EvalQuestion.objects.get)(kb=kb)
    assert (labelled.text, labelled.relevant, labelled.answers) == (question, [str(passage["document_id"])], ["9800 元"])
    assert (await health(alice, kb.pk)).json()["failing"][0]["labelled"] is True

    # The same question again (another wording) adds to the same labelled question, never a second one.
    response = await post(alice, url, {"question": question + "？", "chunk_id": passage["chunk_id"]})
    assert response.status_code == 201 and await in_thread(EvalQuestion.objects.filter(kb=kb).count)() == 1

    # A passage of another KB is not this KB's to label.
    foreign = await in_thread(lambda: Chunk.objects.filter(kb=bob_kb).values_list("pk", flat=True).first())()
    response = await post(alice, url, {"question": question, "chunk_id": foreign})
    assert response.status_code == 404 and response.json()["error"]["code"] == "chunk_not_found"


async def test_after_a_new_version_the_passages_offered_are_the_current_ones(uncertain_kb, alice, alice_token, ingest):
    """A turn's sources name the chunks of the version that answered it; a new version replaces them. The report maps
    each to the current version's passage with its text, or, when the new version no longer holds that text, offers
    the passages a search finds now, so labelling what the page offers never fails with ``chunk_not_found``."""
    kb = uncertain_kb
    price, memory = "专业版一年多少钱", "安装需要多少内存"
    for question in (price, memory):
        assert (await ask(alice_token, [kb.pk], question))["verdict"] == "uncertain"
    before = {r["question"]: r["passages"] for r in (await health(alice, kb.pk)).json()["failing"]}
    assert "9800 元" in before[price][0]["content"] and "4 GB" in before[memory][0]["content"]
    # New versions: pro.md's price passage word for word the same (its features changed), install.md's memory not.
    await in_thread(ingest)(kb, {"pro.md": DOCS["pro.md"].replace("命中测试", "命中测试和标注"),
                                 "install.md": DOCS["install.md"].replace("4 GB", "8 GB")})

    after = {r["question"]: r["passages"] for r in (await health(alice, kb.pk)).json()["failing"]}
    current = await in_thread(lambda: dict(Chunk.objects.filter(kb=kb).values_list("pk", "content")))()
    assert all(p["chunk_id"] in current for passages in after.values() for p in passages), (after, current)
    moved = after[price][0]
    assert moved["content"] == before[price][0]["content"] and moved["chunk_id"] != before[price][0]["chunk_id"]
    assert after[memory] and not any("4 GB" in p["content"] for p in after[memory])  # the replaced text is gone
    assert "8 GB" in after[memory][0]["content"]

    url = f"/api/kbs/{kb.pk}/health/labels/"
    response = await post(alice, url, {"question": price, "chunk_id": moved["chunk_id"], "answer": "9800 元"})
    assert response.status_code == 201, response.content
    labelled = await in_thread(EvalQuestion.objects.get)(kb=kb)
    assert labelled.chunk_ids == [moved["chunk_id"]] and labelled.relevant == [str(moved["document_id"])]
    response = await post(alice, url, {"question": memory, "chunk_id": after[memory][0]["chunk_id"]})
    assert response.status_code == 201, response.content


async def test_downvotes_are_grouped_by_reason(chat_kb, alice, alice_token):
    kb = chat_kb
    finish = await ask(alice_token, [kb.pk], "知库专业版的价格是多少？")

    @in_thread
    def vote():
        from chat.models import Message

        Feedback.objects.create(message=Message.objects.get(pk=finish["message_id"]), user=alice, rating="down",
                                reason="引用的段落不对")
    await vote()
    data = (await health(alice, kb.pk)).json()
    assert data["downvotes"] == [{"reason": "引用的段落不对", "count": 1, "last": data["downvotes"][0]["last"],
                                  "questions": ["知库专业版的价格是多少？"]}]


async def test_only_owners_see_a_kbs_health(judged_kb, alice, bob, alice_token):
    kb = judged_kb
    await ask(alice_token, [kb.pk], MISSING)
    for role in (None, Role.VIEWER, Role.EDITOR):
        if role:
            await in_thread(membership_set)(kb=kb, role=role, user=bob)
        response = await health(bob, kb.pk)
        assert response.status_code == 404 and response.json()["error"]["code"] == "kb_not_found", role

        @in_thread
        def page():
            client = Client()
            client.force_login(bob)
            return client.get(f"/kbs/{kb.pk}/health/")
        assert (await page()).status_code == 404
        response = await post(bob, f"/api/kbs/{kb.pk}/health/faq/", {"question": MISSING, "answer": ANSWER})
        assert response.status_code == 404
    await in_thread(membership_set)(kb=kb, role=Role.OWNER, user=bob)
    response = await health(bob, kb.pk)
    assert response.status_code == 200 and response.json()["failing"][0]["question"] == MISSING


async def test_bad_input_is_a_400(judged_kb, alice):
    kb = judged_kb
    response = await health(alice, kb.pk, "?since=2")
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_since"
    response = await post(alice, f"/api/kbs/{kb.pk}/health/faq/", {"question": MISSING, "answer": "  "})
    assert response.status_code == 400
    response = await post(alice, f"/api/kbs/{kb.pk}/health/labels/", {"question": MISSING, "chunk_id": "x"})
    assert response.status_code == 400
    response = await post(alice, f"/api/kbs/{kb.pk}/health/faq/", {"question": MISSING, "answer": "a", "extra": 1})
    assert response.status_code == 400
