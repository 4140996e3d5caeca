"""POST /api/chat/stream/: the websocket's events as Server-Sent Events, through the real ASGI application."""
from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.testing import ApplicationCommunicator
from chat_helpers import session_cookie

from chat.models import Message
from chat.services import in_thread
from chat.sse import sse_encode

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "知库专业版的价格是多少？"


def scope(headers: list[tuple[bytes, bytes]]) -> dict:
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": "/api/chat/stream/", "raw_path": b"/api/chat/stream/", "query_string": b"", "root_path": "",
        "headers": [(b"host", b"testserver"), (b"content-type", b"application/json"), *headers],
        "client": ("127.0.0.1", 5000), "server": ("testserver", 80),
    }


async def start(body: dict, headers: list[tuple[bytes, bytes]]) -> tuple[ApplicationCommunicator, dict]:
    from config.asgi import application

    communicator = ApplicationCommunicator(application, scope(headers))
    await communicator.send_input({"type": "http.request", "body": json.dumps(body).encode(), "more_body": False})
    head = await communicator.receive_output(timeout=15)
    return communicator, head


async def read_body(communicator) -> bytes:
    """The rest of the body; then the application is let finish (it closes its connections as the request ends)."""
    chunks = []
    while True:
        message = await communicator.receive_output(timeout=15)
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            await communicator.wait(timeout=5)
            return b"".join(chunks)


def parse(body: bytes) -> list[tuple[str, dict]]:
    frames = []
    for frame in body.decode().split("\n\n"):
        if not frame.strip():
            continue
        lines = dict(line.split(": ", 1) for line in frame.split("\n"))
        frames.append((lines["event"], json.loads(lines["data"])))
    return frames


def auth(token: str) -> list[tuple[bytes, bytes]]:
    return [(b"authorization", f"Token {token}".encode())]


def test_frames_carry_the_event_type_and_json():
    assert sse_encode({"type": "token", "text": "价格"}) == 'event: token\ndata: {"type": "token", "text": "价格"}\n\n'.encode()


async def test_token_client_receives_the_same_events_as_the_websocket(chat_kb, alice_token):
    communicator, head = await start({"kb_ids": [chat_kb.pk], "question": QUESTION}, auth(alice_token))
    assert head["status"] == 200
    headers = {k.lower(): v for k, v in head["headers"]}
    assert headers[b"content-type"] == b"text/event-stream; charset=utf-8"
    assert headers[b"cache-control"] == b"no-cache"
    frames = parse(await read_body(communicator))
    names = [name for name, _ in frames]
    assert names[:3] == ["start", "rewrite", "sources"] and names[-1] == "finish"
    assert set(names[3:-1]) == {"token"}
    assert all(name == data["type"] for name, data in frames)
    finish = frames[-1][1]
    assert finish["answer"] == "".join(d["text"] for n, d in frames if n == "token") and "9800" in finish["answer"]


async def test_not_found_over_sse_calls_no_llm(judged_kb, alice_token, llm_on):
    communicator, _ = await start({"kb_ids": [judged_kb.pk], "question": "火星的首都是哪座城市？"}, auth(alice_token))
    frames = parse(await read_body(communicator))
    assert frames[-1][1]["hit"] is False and frames[-1][1]["answer"] == judged_kb.not_found_text
    assert frames[-1][1]["not_found_by"] == "retrieval"
    assert llm_on.requests == []


async def test_the_llm_saying_not_found_over_sse_closes_its_stream(chat_kb, alice_token, llm_on):
    llm_on.say(" [[NOT_FOUND]]\n" + "片段中没有答案。" * 20, 3)
    llm_on.delay = 0.01
    communicator, _ = await start({"kb_ids": [chat_kb.pk], "question": QUESTION}, auth(alice_token))
    frames = parse(await read_body(communicator))

    assert frames[2][1]["hit"] is True and frames[2][1]["sources"]
    tokens = [d["text"] for name, d in frames if name == "token"]
    assert "".join(tokens) == chat_kb.not_found_text and not any("NOT" in t or "[[" in t for t in tokens)
    finish = frames[-1][1]
    assert (finish["hit"], finish["not_found_by"], finish["answer"]) == (False, "llm", chat_kb.not_found_text)
    row = await in_thread(Message.objects.get)(pk=finish["message"])
    assert (row.hit, row.not_found_by, row.content) == (False, "llm", chat_kb.not_found_text)
    # The verdict is known from the reply's start: the rest is not waited for.
    assert await asyncio.to_thread(llm_on.client_gone.wait, 3)
    assert llm_on.streams[0].sent < len(llm_on.chunks)


async def test_errors_before_streaming_are_json_with_their_status(chat_kb, bob_kb, alice_token, monkeypatch):
    searched = []
    monkeypatch.setattr("chat.services.search", lambda asked: searched.append(asked))
    communicator, head = await start({"kb_ids": [bob_kb.pk], "question": QUESTION}, auth(alice_token))
    assert head["status"] == 404
    assert json.loads(await read_body(communicator)) == {"error": {"code": "kb_not_found", "message": "未找到该知识库。"}}
    assert searched == []


async def test_anonymous_and_bad_tokens_are_401():
    for headers in ([], auth("nope")):
        communicator, head = await start({"kb_ids": [1], "question": QUESTION}, headers)
        assert head["status"] == 401
        await read_body(communicator)


async def test_session_clients_need_the_csrf_token(chat_kb, alice):
    cookie = await session_cookie(alice)
    communicator, head = await start({"kb_ids": [chat_kb.pk], "question": QUESTION}, [(b"cookie", cookie)])
    assert head["status"] == 403
    await read_body(communicator)

    from django.middleware.csrf import _get_new_csrf_string, _mask_cipher_secret

    secret = _get_new_csrf_string()
    headers = [(b"cookie", cookie + f"; csrftoken={secret}".encode()), (b"x-csrftoken", _mask_cipher_secret(secret).encode())]
    communicator, head = await start({"kb_ids": [chat_kb.pk], "question": QUESTION}, headers)
    assert head["status"] == 200
    assert parse(await read_body(communicator))[-1][0] == "finish"


@pytest.mark.parametrize("origin", [b"http://localhost:9999", b"https://testserver", b"http://testserver:1", b"null"])
async def test_a_session_client_from_another_origin_is_refused_even_with_the_csrf_token(chat_kb, alice, origin):
    """Django's CSRF check compares the Origin's scheme, host and port with the request's own (or a trusted one)."""
    from django.middleware.csrf import _get_new_csrf_string, _mask_cipher_secret

    secret = _get_new_csrf_string()
    headers = [(b"cookie", await session_cookie(alice) + f"; csrftoken={secret}".encode()),
               (b"x-csrftoken", _mask_cipher_secret(secret).encode())]
    communicator, head = await start({"kb_ids": [chat_kb.pk], "question": QUESTION}, [*headers, (b"origin", origin)])
    body = await read_body(communicator)
    assert head["status"] == 403 and json.loads(body)["error"]["code"] == "permission_denied"
    communicator, head = await start({"kb_ids": [chat_kb.pk], "question": QUESTION}, [*headers, (b"origin", b"http://testserver")])
    assert head["status"] == 200
    await read_body(communicator)


async def test_a_token_client_needs_no_origin(chat_kb, alice_token):
    """A token is no ambient credential a page of another site could borrow: token clients' Origin is not checked."""
    communicator, head = await start({"kb_ids": [chat_kb.pk], "question": QUESTION},
                                     [*auth(alice_token), (b"origin", b"http://localhost:9999")])
    assert head["status"] == 200
    assert parse(await read_body(communicator))[-1][0] == "finish"


async def test_client_disconnect_stops_the_llm_and_settles_the_answer(chat_kb, alice_token, llm_on):
    llm_on.chunks, llm_on.delay = [f"字{i}" for i in range(200)], 0.02
    communicator, head = await start({"kb_ids": [chat_kb.pk], "question": QUESTION}, auth(alice_token))
    assert head["status"] == 200
    seen = b""
    while seen.count(b"event: token") < 3:
        seen += (await communicator.receive_output(timeout=10))["body"]
    message_id = parse(seen.split(b"event: token")[0])[0][1]["message"]
    await communicator.send_input({"type": "http.disconnect"})
    assert await asyncio.to_thread(llm_on.client_gone.wait, 3)
    for _ in range(50):
        status = await in_thread(lambda: Message.objects.get(pk=message_id).status)()
        if status != "incomplete":
            break
        await asyncio.sleep(0.05)
    assert status == "cancelled"
    await communicator.wait(timeout=5)


async def start_raw(body: bytes, headers: list[tuple[bytes, bytes]]) -> tuple[int, dict]:
    from config.asgi import application

    communicator = ApplicationCommunicator(application, scope(headers))
    await communicator.send_input({"type": "http.request", "body": body, "more_body": False})
    head = await communicator.receive_output(timeout=15)
    payload = json.loads(await read_body(communicator))
    return head["status"], payload


@pytest.mark.parametrize("body, status, code", [
    (b"[" * 30_000 + b"]" * 30_000, 400, "json_too_deep"),
    ('{"kb_ids": [1], "question": "价\\u0000格"}'.encode(), 400, "invalid_characters"),
    (b'{"kb_ids": [1], "question": ', 400, "invalid_json"),
    (json.dumps({"kb_ids": [1], "question": "x" * 100_000}).encode(), 413, "body_too_large"),
])
async def test_bad_bodies_get_the_rest_error_codes(alice_token, body, status, code):
    got_status, payload = await start_raw(body, auth(alice_token))
    assert got_status == status
    assert payload["error"]["code"] == code and payload["error"]["message"]
