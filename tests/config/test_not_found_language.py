"""Issue 47 item 5: a KB without a not-found text of its own answers "not found" in the asker's language (the
language switch's cookie, Accept-Language, the chat websocket's handshake; Chinese by default), in the search API
in chat, in the agents' search tool (/api/tools/search/) and in MCP's search (assistants/mcp_tools.py; over HTTP in
tests/assistants/test_mcp.py); a KB with its own text keeps it in every language (knowledge/not_found.py)."""
from __future__ import annotations

import pytest

from tests.chat.chat_helpers import DOCS, ORIGIN, connect, receive_until_end

OFF_TOPIC = "火星的首都是哪座城市？"
ZH = "抱歉，知识库中未找到相关内容。"
EN = "Sorry, nothing in the knowledge base answers this."
OWN = "这个问题请拨打客服热线 400-000-0000。"


@pytest.fixture
def filled_kb(kb, ingest):
    ingest(kb, DOCS)
    return kb


def searched(client, kb, **headers) -> dict:
    response = client.post("/api/search/", {"query": OFF_TOPIC, "kb_ids": [kb.pk]}, format="json", **headers)
    assert response.status_code == 200, response.content[:300]
    body = response.json()
    assert body["hit"] is False
    return body


@pytest.mark.django_db
def test_search_answers_the_default_in_the_readers_language(client_for, alice, filled_kb):
    client = client_for(alice)
    assert searched(client, filled_kb)["not_found_text"] == ZH
    assert searched(client, filled_kb, HTTP_ACCEPT_LANGUAGE="zh-hans")["not_found_text"] == ZH
    assert searched(client, filled_kb, HTTP_ACCEPT_LANGUAGE="en")["not_found_text"] == EN
    client.cookies["django_language"] = "en"  # the console's language switch wins over the header
    assert searched(client, filled_kb, HTTP_ACCEPT_LANGUAGE="zh-hans")["not_found_text"] == EN


@pytest.mark.django_db
def test_a_kb_with_its_own_text_keeps_it_in_every_language(client_for, alice, filled_kb):
    filled_kb.not_found_text = OWN
    filled_kb.save(update_fields=["not_found_text"])
    client = client_for(alice)
    assert searched(client, filled_kb, HTTP_ACCEPT_LANGUAGE="en")["not_found_text"] == OWN
    assert searched(client, filled_kb)["not_found_text"] == OWN


async def ask(kb, token: str, language: bytes | None) -> dict:
    headers = (ORIGIN,) if language is None else (ORIGIN, (b"accept-language", language))
    communicator, connected = await connect(f"/ws/chat/?token={token}", headers=headers)
    assert connected
    await communicator.send_json_to({"type": "ask", "kb_ids": [kb.pk], "question": OFF_TOPIC})
    events = await receive_until_end(communicator)
    await communicator.disconnect()
    finish = events[-1]
    assert finish["type"] == "finish" and finish["hit"] is False, finish
    return finish


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("language", "expected"), [(None, ZH), (b"zh-CN,zh;q=0.9", ZH), (b"en-US,en;q=0.9", EN)])
async def test_the_chat_websocket_answers_in_the_handshakes_language(filled_kb, alice, language, expected):
    from channels.db import database_sync_to_async

    from tests.helpers import api_token

    token = await database_sync_to_async(api_token)(alice)
    finish = await ask(filled_kb, token, language)
    assert finish["answer"] == expected and finish["mode"] == "not_found"


@pytest.mark.django_db(transaction=True)
async def test_the_chat_websocket_keeps_a_kbs_own_text_in_english(filled_kb, alice):
    from channels.db import database_sync_to_async

    from tests.helpers import api_token

    filled_kb.not_found_text = OWN
    await database_sync_to_async(filled_kb.save)(update_fields=["not_found_text"])
    token = await database_sync_to_async(api_token)(alice)
    assert (await ask(filled_kb, token, b"en"))["answer"] == OWN


def tool_searched(client, kb, **headers) -> dict:
    response = client.post("/api/tools/search/", {"query": OFF_TOPIC, "kb_ids": [kb.pk]}, format="json", **headers)
    assert response.status_code == 200, response.content[:300]
    body = response.json()
    assert body["hit"] is False and body["results"] == []
    return body


@pytest.mark.django_db
def test_the_agents_search_tool_says_not_found_in_the_turns_language(client_for, alice, filled_kb):
    client = client_for(alice)
    assert tool_searched(client, filled_kb)["content"] == f"未找到相关内容：{ZH}"
    assert tool_searched(client, filled_kb, HTTP_ACCEPT_LANGUAGE="zh-CN")["content"] == f"未找到相关内容：{ZH}"
    assert tool_searched(client, filled_kb, HTTP_ACCEPT_LANGUAGE="en")["content"] == f"Nothing relevant found: {EN}"
    filled_kb.not_found_text = OWN
    filled_kb.save(update_fields=["not_found_text"])
    assert tool_searched(client, filled_kb, HTTP_ACCEPT_LANGUAGE="en")["content"] == f"Nothing relevant found: {OWN}"


@pytest.mark.django_db
def test_mcps_search_payload_follows_the_active_language():
    """assistants.mcp_server runs each tool under the request's language (Accept-Language; stdio and a request
    without one: Chinese); the payload applies it to the shipped default only."""
    from django.utils import translation

    from assistants.mcp_tools import search_payload
    from knowledge.retrieval import defaults
    from knowledge.retrieval.types import RetrievalResult

    stored = RetrievalResult(hit=False, candidates=[], not_found_text=defaults.NOT_FOUND_TEXT)
    own = RetrievalResult(hit=False, candidates=[], not_found_text=OWN)
    with translation.override("en"):
        assert search_payload(stored)["not_found_text"] == EN
        assert search_payload(own)["not_found_text"] == OWN
    with translation.override("zh-hans"):
        assert search_payload(stored)["not_found_text"] == ZH == defaults.NOT_FOUND_TEXT
