"""POST /api/assistants/<id>/chat/stream/ (assistants/sse.py): the owner tries the assistant through the real ASGI
application and gets the chat's SSE events, on the try channel; anyone else gets a 404 before anything runs."""
from __future__ import annotations

import json

import pytest

from chat.models import Conversation
from chat.services import in_thread

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "知库专业版的价格是多少？"


async def post(path: str, body, headers: list[tuple[bytes, bytes]]) -> tuple[int, bytes]:
    from asgiref.testing import ApplicationCommunicator

    from config.asgi import application

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
        "headers": [(b"host", b"testserver"), (b"content-type", b"application/json"), *headers],
        "client": ("127.0.0.1", 5000), "server": ("testserver", 80),
    }
    communicator = ApplicationCommunicator(application, scope)
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    await communicator.send_input({"type": "http.request", "body": raw, "more_body": False})
    head = await communicator.receive_output(timeout=90)
    chunks = []
    while True:
        message = await communicator.receive_output(timeout=90)
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            await communicator.wait(timeout=5)
            return head["status"], b"".join(chunks)


def frames(body: bytes) -> list[dict]:
    return [json.loads(line[6:]) for line in body.decode().split("\n") if line.startswith("data: ")]


def token_of(user) -> list[tuple[bytes, bytes]]:
    from tests.helpers import api_token

    return [(b"authorization", f"Token {api_token(user)}".encode())]


async def test_the_owner_tries_the_assistant_and_the_turn_is_on_the_try_channel(alice, assistant):
    headers = await in_thread(token_of)(alice)
    status, body = await post(f"/api/assistants/{assistant.pk}/chat/stream/", {"question": QUESTION}, headers)
    assert status == 200, body
    events = frames(body)
    assert [e["type"] for e in events][:3] == ["start", "rewrite", "sources"] and events[-1]["type"] == "finish"
    assert "9800" in events[-1]["answer"] and events[-1]["citations"]
    conversation = await in_thread(Conversation.objects.get)(pk=events[0]["conversation"])
    assert (conversation.channel, conversation.assistant_id) == ("try", assistant.pk)

    # The next question continues that preview conversation.
    status, body = await post(f"/api/assistants/{assistant.pk}/chat/stream/",
                              {"question": "那安装需要什么？", "conversation": conversation.pk}, headers)
    assert status == 200 and frames(body)[0]["conversation"] == conversation.pk


@pytest.mark.parametrize("body, status, code", [
    ({"question": QUESTION, "kb_ids": [1]}, 400, "invalid_try_body"),
    (["question"], 400, "invalid_try_body"),
    ({"question": ""}, 400, None),
    ({"question": QUESTION, "conversation": 999999}, 404, "conversation_not_found"),
    (b"{not json", 400, "invalid_json"),
])
async def test_bad_bodies_are_json_errors_with_codes(alice, assistant, body, status, code):
    headers = await in_thread(token_of)(alice)
    got, raw = await post(f"/api/assistants/{assistant.pk}/chat/stream/", body, headers)
    error = json.loads(raw)["error"]
    assert got == status and (code is None or error["code"] == code), raw


async def test_another_user_and_anonymous_callers_are_refused(bob, assistant):
    headers = await in_thread(token_of)(bob)
    status, raw = await post(f"/api/assistants/{assistant.pk}/chat/stream/", {"question": QUESTION}, headers)
    assert status == 404 and json.loads(raw)["error"]["code"] == "assistant_not_found"
    status, _ = await post(f"/api/assistants/{assistant.pk}/chat/stream/", {"question": QUESTION}, [])
    assert status == 401
    assert await in_thread(Conversation.objects.filter(assistant=assistant).count)() == 0
