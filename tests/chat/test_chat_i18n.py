"""Websocket and SSE error messages follow the handshake's language; their codes do not change."""
from __future__ import annotations

import json

import pytest
from chat_helpers import ORIGIN, connect

pytestmark = [pytest.mark.django_db(transaction=True)]

EN = (b"accept-language", b"en-US,en;q=0.9")
ZH = (b"accept-language", b"zh-CN,zh;q=0.9")


async def first_error(path: str, headers, frame: str | None = None) -> dict:
    communicator, _ = await connect(path, headers=headers)
    if frame is not None:
        await communicator.send_to(text_data=frame)
    event = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()
    assert event["type"] == "error"
    return event


async def test_websocket_errors_follow_accept_language(alice_token):
    path = f"/ws/chat/?token={alice_token}"
    frame = '{"type": "ask", "kb_ids": [], "question": "价格"}'
    english = await first_error(path, [ORIGIN, EN], frame)
    chinese = await first_error(path, [ORIGIN, ZH], frame)
    default = await first_error(path, [ORIGIN], frame)
    assert english["code"] == chinese["code"] == default["code"] == "no_kbs"
    assert english["message"] == "Choose at least one knowledge base."
    assert chinese["message"] == default["message"] == "请至少选择一个知识库。"

    english = await first_error(path, [ORIGIN, EN], '{"type": "dance"}')
    chinese = await first_error(path, [ORIGIN, ZH], '{"type": "dance"}')
    assert english["code"] == chinese["code"] == "unknown_type"
    assert english["message"] == 'The message type must be "ask" or "cancel".' and "消息类型" in chinese["message"]


async def test_websocket_language_cookie_wins_over_accept_language(alice_token):
    event = await first_error("/ws/chat/", [ORIGIN, ZH, (b"cookie", b"django_language=en")])
    assert event["code"] == "not_authenticated" and event["message"].startswith("Sign in")
    event = await first_error("/ws/chat/", [ORIGIN, EN, (b"cookie", b"django_language=zh-hans")])
    assert event["code"] == "not_authenticated" and event["message"].startswith("请先登录")


async def test_sse_errors_follow_accept_language(alice_token):
    from test_chat_sse import auth, read_body, start

    bodies = {}
    for name, header in (("en", EN), ("zh", ZH)):
        communicator, head = await start({"kb_ids": [], "question": "价格"}, [*auth(alice_token), header])
        assert head["status"] == 400
        bodies[name] = json.loads(await read_body(communicator))["error"]
    assert bodies["en"]["code"] == bodies["zh"]["code"] == "no_kbs"
    assert bodies["en"]["message"] == "Choose at least one knowledge base."
    assert bodies["zh"]["message"] == "请至少选择一个知识库。"
