"""Conversations, feedback and the search tool over REST; the chat page."""
from __future__ import annotations

import pytest

from chat.models import Conversation, Feedback, Message, MessageStatus
from chat.services import turn_settle, turn_start
from knowledge.models import Document


@pytest.fixture
def conversation(db, alice, kb):
    """Alice's conversation with one finished question and answer."""
    document = Document.objects.create(kb=kb, source_name="pro.md", doc_type="md", sha256="0" * 64, status="ready")
    cited = {"n": 1, "chunk_id": 1, "kb_id": kb.pk, "document": {"id": document.pk, "title": "", "source_name": "pro.md"}}
    turn = turn_start(user=alice, conversation_id=None, kb_ids=[kb.pk], question="知库专业版的价格是多少？")
    turn_settle(turn=turn, rewritten_query="知库专业版 价格", fields={
        "content": "每年 9800 元[1]。", "status": MessageStatus.COMPLETE, "hit": True, "confidence": 0.9,
        "sources": [cited], "citations": [cited], "answer_mode": "extractive",
    })
    return Conversation.objects.get(pk=turn.conversation_id)


def answer_of(conversation) -> Message:
    return conversation.messages.get(role="assistant")


def test_list_shows_only_ones_own_conversations_newest_first(client_for, alice, bob, kb, conversation):
    Conversation.objects.create(user=bob, title="bob's")
    later = Conversation.objects.create(user=alice, title="later")
    response = client_for(alice).get("/api/conversations/")
    assert response.status_code == 200
    rows = response.json()["results"]
    assert [r["id"] for r in rows] == [later.pk, conversation.pk]
    assert rows[1] | {"created_at": None, "updated_at": None} == {
        "id": conversation.pk, "title": "知库专业版的价格是多少？", "kb_ids": [kb.pk], "message_count": 2,
        "created_at": None, "updated_at": None,
    }


def test_detail_has_the_messages_with_sources_citations_and_my_feedback(client_for, alice, conversation,
                                                                        django_assert_num_queries):
    Feedback.objects.create(message=answer_of(conversation), user=alice, rating="up")
    client = client_for(alice)
    client.get(f"/api/conversations/{conversation.pk}/")  # warm the token lookup's content types
    # token, the user's expired tokens (knox), conversation, messages, feedback, documents still readable (history)
    with django_assert_num_queries(6):
        response = client.get(f"/api/conversations/{conversation.pk}/")
    assert response.status_code == 200
    asked, answer = response.json()["messages"]
    assert (asked["role"], asked["rewritten_query"]) == ("user", "知库专业版 价格")
    assert answer["role"] == "assistant" and answer["status"] == "complete" and answer["hit"] is True
    assert answer["not_found_by"] is None
    assert answer["citations"][0]["chunk_id"] == 1 and answer["feedback"] == {"rating": "up", "reason": ""}
    assert answer["content"] == "每年 9800 元[1]。" and answer["content_redacted"] is False


def test_nobody_reads_or_deletes_another_users_conversation(client_for, bob, conversation):
    client = client_for(bob)
    for response in (client.get(f"/api/conversations/{conversation.pk}/"),
                     client.delete(f"/api/conversations/{conversation.pk}/")):
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "conversation_not_found"
    assert Conversation.objects.filter(pk=conversation.pk).exists()


def test_delete_removes_the_conversation_and_its_messages(client_for, alice, conversation):
    assert client_for(alice).delete(f"/api/conversations/{conversation.pk}/").status_code == 204
    assert not Conversation.objects.exists() and not Message.objects.exists()


def test_feedback_is_recorded_and_a_second_rating_replaces_the_first(client_for, alice, conversation):
    answer, client = answer_of(conversation), client_for(alice)
    assert client.post(f"/api/messages/{answer.pk}/feedback/", {"rating": "up"}, format="json").status_code == 200
    response = client.post(f"/api/messages/{answer.pk}/feedback/", {"rating": "down", "reason": "价格过时"}, format="json")
    assert response.status_code == 200 and response.json()["rating"] == "down"
    assert list(Feedback.objects.values_list("rating", "reason")) == [("down", "价格过时")]


def test_feedback_on_someone_elses_or_a_question_message_is_404(client_for, bob, alice, conversation):
    answer = answer_of(conversation)
    question = conversation.messages.get(role="user")
    assert client_for(bob).post(f"/api/messages/{answer.pk}/feedback/", {"rating": "up"}, format="json").status_code == 404
    response = client_for(alice).post(f"/api/messages/{question.pk}/feedback/", {"rating": "up"}, format="json")
    assert response.status_code == 404 and response.json()["error"]["code"] == "message_not_found"


def test_feedback_rating_must_be_up_or_down(client_for, alice, conversation):
    response = client_for(alice).post(f"/api/messages/{answer_of(conversation).pk}/feedback/", {"rating": "meh"}, format="json")
    assert response.status_code == 400


def test_conversations_need_authentication(api_client):
    assert api_client.get("/api/conversations/").status_code == 401


# --- the search tool -------------------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_tool_search_returns_numbered_text_and_the_json_list(client_for, alice, chat_kb):
    response = client_for(alice).post("/api/tools/search/", {"query": "知库专业版的价格", "kb_ids": [chat_kb.pk], "top_k": 2},
                                      format="json")
    assert response.status_code == 200
    data = response.json()
    assert data["tool"] == "zhiku_search" and data["hit"] is True
    assert data["content"].splitlines()[2].startswith("[1] 来源：知库专业版 › 价格")
    assert len(data["results"]) == 2 and data["results"][0]["section_path"] == ["知库专业版", "价格"]
    assert "9800" in data["results"][0]["content"]


@pytest.mark.django_db(transaction=True)
def test_tool_search_refuses_an_unreadable_kb(client_for, alice, bob_kb):
    response = client_for(alice).post("/api/tools/search/", {"query": "价格", "kb_ids": [bob_kb.pk]}, format="json")
    assert response.status_code == 404 and response.json()["error"]["code"] == "kb_not_found"


def test_tool_schema_describes_the_call(client_for, alice):
    schema = client_for(alice).get("/api/tools/search/").json()
    assert schema["function"]["name"] == "zhiku_search"
    assert schema["function"]["parameters"]["required"] == ["query", "kb_ids"]


# --- pages -------------------------------------------------------------------------------

def test_chat_page_needs_login(client):
    response = client.get("/chat/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_chat_page_lists_only_readable_kbs_escaped(client, alice, bob, make_kb):
    make_kb(alice, "<b>Alice</b> 知识库")
    make_kb(bob, "Bob's secret")
    client.force_login(alice)
    html = client.get("/chat/").content.decode()
    assert "&lt;b&gt;Alice&lt;/b&gt; 知识库" in html and "<b>Alice</b>" not in html
    assert "Bob&#x27;s secret" not in html and "Bob's secret" not in html
    assert 'src="/static/chat/chat.js"' in html


def test_home_page_links_to_the_chat(client, alice):
    client.force_login(alice)
    assert 'href="/chat/"' in client.get("/").content.decode()
