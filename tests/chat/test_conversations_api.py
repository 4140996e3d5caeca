"""One's own conversations renamed and searched over REST (chat/conversations.py, chat/selectors.py): bounded titles
and search texts, answered 4xx with a code; nobody renames or finds another person's conversation."""
from __future__ import annotations

import pytest

from chat.models import Conversation, Message, Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def chats(alice, bob, kb):
    """Alice's three conversations (the oldest first) and one of Bob's that holds the words she searches for."""
    made = {}
    for title, question, answer in (("年假", "年假有几天？", "每年十天带薪年假。"),
                                    ("退货", "退货运费谁出？", "买家承担，质量问题除外。"),
                                    ("Pricing", "How much is Zhiku Pro?", "9800 a year.")):
        conversation = Conversation.objects.create(user=alice, title=title, kb_ids=[kb.pk])
        Message.objects.bulk_create([Message(conversation=conversation, role=Role.USER, content=question),
                                     Message(conversation=conversation, role=Role.ASSISTANT, content=answer)])
        made[title] = conversation
    made["bob"] = Conversation.objects.create(user=bob, title="年假 (bob)", kb_ids=[kb.pk])
    return made


def titles(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [row["title"] for row in response.json()["results"]]


def test_rename_changes_the_title_trimmed_and_keeps_the_place_in_the_list(client_for, alice, chats):
    client = client_for(alice)
    before = titles(client.get("/api/conversations/"))
    leave = chats["年假"]
    response = client.patch(f"/api/conversations/{leave.pk}/", {"title": "  2026 年的假期  "}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert (body["id"], body["title"], body["message_count"]) == (leave.pk, "2026 年的假期", 2)
    leave.refresh_from_db()
    assert leave.title == "2026 年的假期"
    # Renaming is not activity: the oldest conversation stays last.
    assert titles(client.get("/api/conversations/")) == [t if t != "年假" else "2026 年的假期" for t in before]


@pytest.mark.parametrize(("body", "field"), [
    ({"title": ""}, "title"), ({"title": "   "}, "title"), ({"title": "长" * 201}, "title"), ({"title": 7}, "title"),
    ({}, "title"), ({"title": "ok", "kb_ids": [1]}, "kb_ids"),
])
def test_a_bad_title_is_400_with_its_field(client_for, alice, chats, body, field):
    response = client_for(alice).patch(f"/api/conversations/{chats['年假'].pk}/", body, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] in ("invalid", "unknown_field") and field in error["fields"]
    assert Conversation.objects.get(pk=chats["年假"].pk).title == "年假"


def test_a_title_of_200_characters_is_kept_whole(client_for, alice, chats):
    response = client_for(alice).patch(f"/api/conversations/{chats['退货'].pk}/", {"title": "长" * 200}, format="json")
    assert response.status_code == 200 and response.json()["title"] == "长" * 200


def test_nobody_renames_another_persons_conversation(client_for, bob, chats):
    response = client_for(bob).patch(f"/api/conversations/{chats['年假'].pk}/", {"title": "mine now"}, format="json")
    assert response.status_code == 404 and response.json()["error"]["code"] == "conversation_not_found"
    assert Conversation.objects.get(pk=chats["年假"].pk).title == "年假"


def test_an_assistants_conversation_is_not_renamed_from_the_owners_list(client_for, alice, kb):
    from assistants.services import assistant_create

    assistant = assistant_create(owner=alice, name="客服", kb_ids=[kb.pk])
    visitor_chat = Conversation.objects.create(user=alice, assistant=assistant, title="访客", kb_ids=[kb.pk])
    response = client_for(alice).patch(f"/api/conversations/{visitor_chat.pk}/", {"title": "x"}, format="json")
    assert response.status_code == 404


def test_renaming_needs_authentication(api_client, chats):
    assert api_client.patch(f"/api/conversations/{chats['年假'].pk}/", {"title": "x"}, format="json").status_code == 401


@pytest.mark.parametrize(("q", "expected"), [
    ("年假", ["年假"]),                 # the title (Bob's 「年假 (bob)」 is his own)
    ("运费", ["退货"]),                 # a question
    ("质量问题", ["退货"]),             # an answer
    ("zhiku pro", ["Pricing"]),        # case-insensitive
    ("  退货 ", ["退货"]),              # surrounding spaces ignored
    ("", ["Pricing", "退货", "年假"]),  # blank: all, most recent first
    ("没有这回事", []),
])
def test_search_finds_ones_own_conversations_by_title_question_or_answer(client_for, alice, chats, q, expected):
    assert titles(client_for(alice).get("/api/conversations/", {"q": q})) == expected


def test_search_never_finds_another_persons_conversation(client_for, bob, chats):
    assert titles(client_for(bob).get("/api/conversations/", {"q": "年假"})) == ["年假 (bob)"]
    assert titles(client_for(bob).get("/api/conversations/", {"q": "运费"})) == []


def test_a_search_text_over_200_characters_is_400(client_for, alice, chats):
    response = client_for(alice).get("/api/conversations/", {"q": "假" * 201})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_conversation_search" and "200" in error["message"] and "q" in error["fields"]
    assert client_for(alice).get("/api/conversations/", {"q": "假" * 200}).status_code == 200


def test_a_nul_in_the_search_text_is_400_invalid_characters(client_for, alice, chats):
    response = client_for(alice).get("/api/conversations/?q=%00")
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_characters"


def test_the_search_text_is_given_once_and_other_names_are_refused(client_for, alice, chats):
    client = client_for(alice)
    assert client.get("/api/conversations/?q=a&q=b").json()["error"]["code"] == "repeated_parameter"
    assert client.get("/api/conversations/?search=年假").json()["error"]["code"] == "unknown_parameter"


def test_the_search_text_is_in_chinese_for_a_chinese_reader(client_for, alice, chats):
    response = client_for(alice).get("/api/conversations/", {"q": "假" * 201}, HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert response.json()["error"]["message"] == "q 最多 200 个字符。"


def test_the_schema_states_the_search_and_the_rename():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    listing = {p["name"]: p["schema"] for p in schema["paths"]["/api/conversations/"]["get"]["parameters"]}
    assert listing["q"] == {"type": "string", "maxLength": 200}
    patch = schema["paths"]["/api/conversations/{conversation_id}/"]["patch"]
    body = patch["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    title = schema["components"]["schemas"][body]["properties"]["title"]
    assert (title["minLength"], title["maxLength"]) == (1, 200)
    assert {"200", "400", "404"} <= set(patch["responses"])
