"""Saved conversations follow access (chat/history.py): what the reader can no longer read is withheld.

The conversations are made by the real chat (the websocket, extractive answers) over a KB with
a document restricted to a group; access is then taken away the way an owner does it (the
group membership, then the KB membership) and the conversation is read back through the API.
The smaller cases (a deleted or replaced document, stored JSON of any shape, the one query)
run on documents written directly.
"""
from __future__ import annotations

import json

import pytest
from chat_helpers import LEAVE, SECRET, connect, hr_member, receive_until_end
from django.contrib.auth.models import Group

from chat.history import readable_view
from chat.models import Conversation, Message, MessageStatus
from chat.services import turn_start
from knowledge.models import Document, DocumentStatus, Membership, Role
from knowledge.services.documents import document_restrict
from knowledge.services.kbs import membership_set


async def chat(key: str, kb, *questions: str) -> int:
    """Ask ``questions`` in one new conversation over the websocket; its id."""
    communicator, connected = await connect(f"/ws/chat/?token={key}")
    assert connected
    conversation = None
    for question in questions:
        await communicator.send_json_to({"type": "ask", "conversation": conversation, "kb_ids": [kb.pk], "question": question})
        events = await receive_until_end(communicator)
        assert events[-1]["type"] == "finish", events[-1]
        conversation = events[0]["conversation"]
    await communicator.disconnect()
    return conversation


def read(client_for, user, conversation_id: int) -> tuple[dict, str]:
    response = client_for(user).get(f"/api/conversations/{conversation_id}/")
    assert response.status_code == 200
    return response.json(), response.content.decode()


def salary_id(kb) -> int:
    return Document.objects.get(kb=kb, source_name="salary.md").pk


@pytest.mark.django_db(transaction=True)
def test_a_member_who_loses_the_group_then_the_kb_no_longer_reads_the_restricted_passages(hr_kb, bob, make_user, client_for):
    import asyncio

    carol = make_user("carol")
    bobs = asyncio.run(chat(hr_member(bob, hr_kb), hr_kb, "年终奖是多少？", "年假有几天？"))
    carols = asyncio.run(chat(hr_member(carol, hr_kb), hr_kb, "年终奖是多少？"))
    stored = list(Message.objects.filter(conversation_id=bobs, role="assistant").order_by("id"))
    assert SECRET in stored[0].content and any(s["document"]["id"] == salary_id(hr_kb) for s in stored[0].sources)

    # While bob is in the group, he reads everything he was shown.
    data, body = read(client_for, bob, bobs)
    assert SECRET in body and LEAVE in body
    assert not any(m["content_redacted"] for m in data["messages"])

    # Out of the group: the restricted passages are gone from his history (sources, citations, answer text).
    bob.groups.clear()
    data, body = read(client_for, bob, bobs)
    assert SECRET not in body and "salary.md" not in body and "薪资制度" not in body
    asked, first, asked_again, second = data["messages"]
    assert (asked["content"], asked_again["content"]) == ("年终奖是多少？", "年假有几天？")  # his own questions stay
    assert first["content"] == "" and first["content_redacted"] is True
    for message, row in ((first, stored[0]), (second, stored[1])):
        for shown, kept in zip(message["sources"], row.sources, strict=True):
            if kept["document"]["id"] == salary_id(hr_kb):
                assert shown == {"n": kept["n"], "redacted": True}
            else:
                assert shown == kept
    if not any(s["document"]["id"] == salary_id(hr_kb) for s in stored[1].sources):
        assert LEAVE in second["content"] and second["content_redacted"] is False
    # A follow-up does not bring the withheld answer back into the prompt or the rewrite.
    turn = turn_start(user=bob, conversation_id=bobs, kb_ids=[hr_kb.pk], question="那年假呢？")
    assert turn.history and not any(SECRET in text for _, text in turn.history)

    # Carol, still in the group, still reads hers.
    assert SECRET in read(client_for, carol, carols)[1]

    # Out of the KB: nothing of it is readable any more; the questions stay.
    Membership.objects.filter(kb=hr_kb, user=bob).delete()
    data, body = read(client_for, bob, bobs)
    assert SECRET not in body and LEAVE not in body and "handbook.md" not in body
    answers = [m for m in data["messages"] if m["role"] == "assistant" and m["status"] == "complete"]
    assert answers and all(m["content_redacted"] and all(s.get("redacted") for s in m["sources"] + m["citations"])
                           for m in answers)
    assert "年终奖是多少？" in body


# --- the rule on documents written directly -----------------------------------------------------

def source(n: int, document: Document, text: str = "段落原文") -> dict:
    """A stored source, shaped as chat.prompts.Source.payload writes it."""
    return {"n": n, "chunk_id": 1000 + n, "kb_id": document.kb_id,
            "document": {"id": document.pk, "title": "标题" + document.source_name, "source_name": document.source_name},
            "section_path": ["章节"], "pages": {"start": None, "end": None}, "chunk_type": "text", "content": text,
            "scores": {"relevance": 0.9}}


def document(kb, name: str, **fields) -> Document:
    fields.setdefault("status", DocumentStatus.READY)
    return Document.objects.create(kb=kb, source_name=name, doc_type="md", sha256="0" * 64, **fields)


def answer(conversation, *sources: dict, hit=True, content="回答[1]。") -> Message:
    return Message.objects.create(conversation=conversation, role="assistant", content=content, hit=hit,
                                  sources=list(sources), citations=[{k: s[k] for k in ("n", "chunk_id", "kb_id", "document")}
                                                                    for s in sources[:1]],
                                  status=MessageStatus.COMPLETE)


@pytest.fixture
def conversation(db, alice, kb):
    return Conversation.objects.create(user=alice, title="t", kb_ids=[kb.pk])


def test_a_deleted_document_is_withheld_even_from_the_owner_and_a_replaced_one_is_not(conversation, kb, alice):
    gone, replaced, kept = document(kb, "gone.md"), document(kb, "v.md", status=DocumentStatus.PROCESSING), document(kb, "kept.md")
    messages = [answer(conversation, source(1, gone, "已删除的段落")), answer(conversation, source(1, replaced, "旧版本的段落")),
                answer(conversation, source(1, kept))]
    gone.delete()
    # A newer version of v.md took the old one's place (ingestion deletes the old row when the new one is ready).
    document(kb, "v.md", version=2)
    replaced.delete()
    view = readable_view(user=alice, messages=messages)
    assert view[messages[0].pk].sources == [{"n": 1, "redacted": True}] and view[messages[0].pk].content_redacted
    assert view[messages[1].pk].sources == messages[1].sources and not view[messages[1].pk].content_redacted
    assert view[messages[2].pk].sources == messages[2].sources


def test_a_viewer_loses_a_replaced_source_when_its_new_version_is_restricted(db, kb, bob):
    membership_set(kb=kb, role=Role.VIEWER, user=bob)
    old = document(kb, "v.md")
    mine = Conversation.objects.create(user=bob, title="t", kb_ids=[kb.pk])
    message = answer(mine, source(1, old))
    newer = document(kb, "v.md", status=DocumentStatus.PROCESSING, version=2)
    old.delete()
    assert readable_view(user=bob, messages=[message])[message.pk].sources == message.sources
    document_restrict(document=newer, groups=[Group.objects.create(name="hr")])
    assert readable_view(user=bob, messages=[message])[message.pk].sources == [{"n": 1, "redacted": True}]


def test_a_not_found_answer_keeps_its_text_and_stored_json_of_any_shape_is_withheld_safely(conversation, alice):
    not_found = Message.objects.create(conversation=conversation, role="assistant", content="抱歉，知识库中未找到相关内容。",
                                       hit=False, sources=[{"n": 1, "document": {"id": 999999}}])
    odd = Message.objects.create(conversation=conversation, role="assistant", content="旧格式", hit=True,
                                 sources=["a string", None, {"n": "x"}, {"document": "nope", "kb_id": True}, 7],
                                 citations=[{"n": 1}])
    view = readable_view(user=alice, messages=[not_found, odd])
    assert view[not_found.pk].content == "抱歉，知识库中未找到相关内容。" and not view[not_found.pk].content_redacted
    assert view[odd.pk].sources == [{"n": None, "redacted": True}] * 4 + [{"n": None, "redacted": True}]
    assert view[odd.pk].content == "" and view[odd.pk].citations == [{"n": 1, "redacted": True}]


def test_a_long_conversation_is_checked_in_one_query(conversation, kb, alice, django_assert_num_queries):
    documents = [document(kb, f"d{i}.md") for i in range(6)]
    messages = [answer(conversation, *(source(n + 1, d) for n, d in enumerate(documents[i % 3:]))) for i in range(30)]
    with django_assert_num_queries(1):
        view = readable_view(user=alice, messages=messages)
    assert all(not v.sources_redacted for v in view.values())


def test_the_api_shows_the_redaction_marker_and_keeps_the_json_of_what_is_readable(client_for, conversation, kb, alice):
    kept, gone = document(kb, "kept.md"), document(kb, "gone.md")
    message = answer(conversation, source(1, kept, "保留"), source(2, gone, "删除的段落原文"))
    gone.delete()
    body = client_for(alice).get(f"/api/conversations/{conversation.pk}/").json()
    (shown,) = body["messages"]
    assert shown["sources"] == [message.sources[0], {"n": 2, "redacted": True}]
    assert shown["content"] == "" and shown["content_redacted"] is True
    assert "删除的段落原文" not in json.dumps(body, ensure_ascii=False)
