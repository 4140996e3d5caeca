"""API tokens on the chat's own transports: ``/ws/chat/?token=`` and ``Authorization: Token`` on the SSE stream.

A live token authenticates; a revoked (password changed, account deactivated) or expired one
is refused exactly like an unknown one: the websocket sends ``not_authenticated`` and closes
with 4401, the SSE endpoint answers 401 ``authentication_failed`` in the API's error shape.
"""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from asgiref.testing import ApplicationCommunicator
from chat_helpers import connect
from django.utils import timezone

from accounts.models import ApiToken
from chat.services import in_thread
from tests.helpers import api_token

pytestmark = [pytest.mark.django_db(transaction=True)]

QUESTION = "知库专业版的价格是多少？"


async def refused_socket(key: str) -> None:
    communicator, connected = await connect(f"/ws/chat/?token={key}")
    assert connected
    assert (await communicator.receive_json_from())["code"] == "not_authenticated"
    assert (await communicator.receive_output())["code"] == 4401


async def sse_status(key: str) -> tuple[int, dict]:
    from config.asgi import application

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": "/api/chat/stream/", "raw_path": b"/api/chat/stream/", "query_string": b"", "root_path": "",
        "headers": [(b"host", b"testserver"), (b"content-type", b"application/json"),
                    (b"authorization", f"Token {key}".encode())],
        "client": ("127.0.0.1", 5000), "server": ("testserver", 80),
    }
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": json.dumps({"kb_ids": [1], "question": QUESTION}).encode()})
    head = await communicator.receive_output(timeout=15)
    body = await communicator.receive_output(timeout=15)
    await communicator.wait(timeout=5)
    return head["status"], json.loads(body["body"])


async def test_a_live_token_is_served_on_the_socket_and_a_password_change_ends_it(alice):
    key = await in_thread(api_token)(alice)
    communicator, connected = await connect(f"/ws/chat/?token={key}")
    assert connected
    # Only an authenticated socket answers a message (an anonymous one is closed): here, that nothing streams.
    await communicator.send_json_to({"type": "cancel"})
    assert (await communicator.receive_json_from())["code"] == "nothing_to_cancel"
    await communicator.disconnect()

    def change_password():
        alice.set_password("a new password")
        alice.save()

    await in_thread(change_password)()
    await refused_socket(key)


async def test_an_expired_token_is_refused_on_the_socket_and_deleted(alice):
    key = await in_thread(api_token)(alice)
    await in_thread(lambda: ApiToken.objects.filter(user=alice).update(expiry=timezone.now() - timedelta(minutes=1)))()
    await refused_socket(key)
    assert not await in_thread(ApiToken.objects.filter(user=alice).exists)()


async def test_a_deactivated_users_token_is_refused_by_the_sse_stream(chat_kb, alice):
    key = await in_thread(api_token)(alice)

    def deactivate():
        alice.is_active = False
        alice.save()

    await in_thread(deactivate)()
    status, body = await sse_status(key)
    assert status == 401 and body["error"]["code"] == "authentication_failed"


async def test_a_revoked_token_is_refused_by_the_sse_stream(alice):
    key = await in_thread(api_token)(alice)
    await in_thread(lambda: ApiToken.objects.filter(user=alice).delete())()
    status, body = await sse_status(key)
    assert status == 401 and set(body) == {"error"} and body["error"]["code"] == "authentication_failed"
