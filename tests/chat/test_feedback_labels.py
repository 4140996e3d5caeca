"""Votes that teach and the review queue, through the REST API: an editor's 👍 is a confirmed label, a viewer's a
pending one in the KB's review queue; 👎 「wrong passage」 names the passage wrong; editors and owners review (a viewer
gets 403, anyone else 404); "this passage answers this question" from hit testing; the KB's learning switch."""
from __future__ import annotations

import pytest

from chat.models import Conversation, Message
from knowledge.models import Chunk, EvalQuestion, LabelSource, LabelStatus
from knowledge.services.kbs import membership_set

pytestmark = [pytest.mark.django_db]

DOCS = {"venue.md": "# 场地\n\n公司年会在杭州西湖国宾馆举办。\n", "leave.md": "# 假期\n\n员工每年享有十天带薪年假。\n"}


@pytest.fixture
def setup(kb, ingest, alice, bob, make_user):
    ingest(kb, DOCS)
    carol = make_user("carol")
    membership_set(kb=kb, role="viewer", user=bob)
    membership_set(kb=kb, role="editor", user=carol)
    return kb, carol


def answer(user, kb, chunk: Chunk, question: str = "公司年会在哪里举办？") -> Message:
    """A settled chat turn of ``user`` over ``kb`` whose answer cites ``chunk``."""
    conversation = Conversation.objects.create(user=user, kb_ids=[kb.pk])
    Message.objects.create(conversation=conversation, role="user", content=question)
    return Message.objects.create(conversation=conversation, role="assistant", content="在西湖国宾馆[1]。", kb_ids=[kb.pk],
                                  verdict="answered", hit=True,
                                  citations=[{"n": 1, "chunk_id": chunk.pk, "kb_id": kb.pk, "document": {"id": chunk.document_id}}])


def vote(client, message: Message, **body):
    return client.post(f"/api/messages/{message.pk}/feedback/", body, format="json")


def venue(kb) -> Chunk:
    return Chunk.objects.get(kb=kb, document__source_name="venue.md")


def test_an_editors_thumbs_up_is_a_confirmed_label_of_the_cited_passage(setup, client_for):
    kb, carol = setup
    message = answer(carol, kb, venue(kb))
    response = vote(client_for(carol), message, rating="up")
    assert response.status_code == 200, response.content
    labelled = response.json()["labelled"]
    assert labelled["status"] == "confirmed" and labelled["kb_id"] == kb.pk
    label = EvalQuestion.objects.get(pk=labelled["id"])
    assert (label.text, label.chunk_ids, label.source, label.message_id) == (
        "公司年会在哪里举办？", [venue(kb).pk], LabelSource.FEEDBACK_UP, message.pk)


def test_a_viewers_votes_wait_for_review_and_a_plain_thumbs_down_withdraws_them(setup, bob, client_for):
    kb, _ = setup
    message = answer(bob, kb, venue(kb))
    client = client_for(bob)
    assert vote(client, message, rating="up").json()["labelled"]["status"] == "pending"
    wrong = vote(client, message, rating="down", reason_code="wrong_passage").json()
    assert wrong["reason_code"] == "wrong_passage" and wrong["labelled"]["status"] == "pending"
    label = EvalQuestion.objects.get(message_id=message.pk)
    assert (label.source, label.chunk_ids, label.negative_chunk_ids) == (LabelSource.FEEDBACK_DOWN, [], [venue(kb).pk])
    assert vote(client, message, rating="down", reason="太慢").json()["labelled"] is None
    assert not EvalQuestion.objects.filter(message_id=message.pk).exists()


def test_wrong_passage_goes_with_a_thumbs_down_only(setup, bob, client_for):
    kb, _ = setup
    response = vote(client_for(bob), answer(bob, kb, venue(kb)), rating="up", reason_code="wrong_passage")
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_reason_code"
    response = vote(client_for(bob), answer(bob, kb, venue(kb)), rating="down", reason_code="nonsense")
    assert response.status_code == 400


def test_the_review_queue_lists_confirms_and_rejects_for_editors_only(setup, alice, bob, make_user, client_for):
    kb, carol = setup
    first = EvalQuestion.objects.get(pk=vote(client_for(bob), answer(bob, kb, venue(kb)), rating="up").json()["labelled"]["id"])
    second = EvalQuestion.objects.get(pk=vote(client_for(bob), answer(bob, kb, venue(kb), "年假几天"), rating="up")
                                      .json()["labelled"]["id"])
    queue = client_for(alice).get(f"/api/kbs/{kb.pk}/labels/")
    assert queue.status_code == 200, queue.content
    rows = queue.json()["results"]
    assert [r["id"] for r in rows] == [second.pk, first.pk] and rows[0]["passages"][0]["chunk_id"] == venue(kb).pk
    assert rows[0]["created_by"] == "bob" and rows[0]["source"] == "feedback_up"
    assert client_for(bob).get(f"/api/kbs/{kb.pk}/labels/").status_code == 403
    assert client_for(bob).post(f"/api/kbs/{kb.pk}/labels/{first.pk}/confirm/").status_code == 403
    stranger = make_user("dave")
    assert client_for(stranger).get(f"/api/kbs/{kb.pk}/labels/").status_code == 404
    assert client_for(stranger).post(f"/api/kbs/{kb.pk}/labels/{first.pk}/confirm/").status_code == 404
    confirmed = client_for(carol).post(f"/api/kbs/{kb.pk}/labels/{first.pk}/confirm/")
    assert confirmed.status_code == 200 and confirmed.json()["status"] == "confirmed"
    assert confirmed.json()["reviewed_by"] == "carol"
    rejected = client_for(alice).post(f"/api/kbs/{kb.pk}/labels/{second.pk}/reject/")
    assert rejected.status_code == 200 and rejected.json()["status"] == "rejected"
    assert client_for(alice).get(f"/api/kbs/{kb.pk}/labels/").json()["results"] == []
    assert [r["id"] for r in client_for(alice).get(f"/api/kbs/{kb.pk}/labels/?status=confirmed").json()["results"]] == [first.pk]
    assert client_for(alice).get(f"/api/kbs/{kb.pk}/labels/?status=maybe").status_code == 400
    assert client_for(alice).post(f"/api/kbs/{kb.pk}/labels/999999/confirm/").status_code == 404


def test_a_label_of_another_kb_is_not_found_there(setup, alice, make_kb, client_for):
    kb, _ = setup
    other = make_kb(alice, "Other")
    label = EvalQuestion.objects.create(kb=kb, text="q", status=LabelStatus.PENDING)
    assert client_for(alice).post(f"/api/kbs/{other.pk}/labels/{label.pk}/confirm/").status_code == 404
    assert EvalQuestion.objects.get(pk=label.pk).status == LabelStatus.PENDING


def test_this_passage_answers_this_question_from_hit_testing(setup, alice, bob, make_kb, ingest, client_for):
    kb, carol = setup
    path = f"/api/kbs/{kb.pk}/labels/"
    response = client_for(carol).post(path, {"question": "年会在哪儿", "chunk_id": venue(kb).pk}, format="json")
    assert response.status_code == 201, response.content
    assert (response.json()["status"], response.json()["source"]) == ("confirmed", "hit_test")
    wrong = client_for(carol).post(path, {"question": "年会在哪儿", "chunk_id": Chunk.objects.get(
        kb=kb, document__source_name="leave.md").pk, "wrong": True}, format="json").json()
    assert wrong["id"] == response.json()["id"] and len(wrong["negative_chunk_ids"]) == 1  # the same question gains it
    assert client_for(bob).post(path, {"question": "年会", "chunk_id": venue(kb).pk}, format="json").status_code == 403
    other = make_kb(alice, "Other")
    ingest(other, {"x.md": "# X\n\n别的知识库。\n"})
    foreign = Chunk.objects.get(kb=other).pk
    response = client_for(alice).post(path, {"question": "年会", "chunk_id": foreign}, format="json")
    assert response.status_code == 404 and response.json()["error"]["code"] == "chunk_not_found"
    assert client_for(alice).post(path, {"question": "", "chunk_id": venue(kb).pk}, format="json").status_code == 400


def test_learning_is_a_kb_setting_owners_switch(setup, alice, client_for):
    kb, carol = setup
    assert client_for(alice).get(f"/api/kbs/{kb.pk}/").json()["learn_from_feedback"] is False
    response = client_for(alice).patch(f"/api/kbs/{kb.pk}/", {"learn_from_feedback": True}, format="json")
    assert response.status_code == 200 and response.json()["learn_from_feedback"] is True
    assert client_for(carol).patch(f"/api/kbs/{kb.pk}/", {"learn_from_feedback": False}, format="json").status_code == 403
