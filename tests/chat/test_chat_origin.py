"""The websocket's Origin rule (scheme, host and port, as Django's CSRF origin check) and its message limit,
against a real daphne on http://127.0.0.1:PORT, plus the rule's cases on handshake scopes."""
from __future__ import annotations

import json

import pytest

from tests.browser import daphne

LIVE = pytest.mark.django_db(transaction=True)  # the server in another process reads the users

@pytest.fixture(scope="module")
def live(tmp_path_factory, django_db_setup, django_db_blocker):
    """One daphne for the module (each test makes its own users and KBs; the server only reads them)."""
    with django_db_blocker.unblock(), daphne(tmp_path_factory.mktemp("daphne") / "daphne.log") as url:
        yield url


def session_cookie(user) -> str:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


def handshake_status(url: str, headers: dict[str, str]) -> int:
    """101 when the handshake is accepted (the socket is closed at once), else the status it was refused with."""
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    try:
        with connect(url, additional_headers=headers, open_timeout=10):
            return 101
    except InvalidStatus as refused:
        return refused.response.status_code


@LIVE
def test_a_real_server_refuses_forged_origins_and_admits_its_own(live, alice):
    from websockets.sync.client import connect

    url = live.replace("http://", "ws://") + "/ws/chat/"
    port = live.rsplit(":", 1)[1]
    cookie = session_cookie(alice)
    forged = [
        "http://localhost:9999", "https://127.0.0.1:4443", "http://127.0.0.1:1",  # the host right, the port or scheme not
        f"https://127.0.0.1:{port}", f"http://localhost:{port}",  # another scheme; another host name for the same address
        "http://evil.example", f"http://127.0.0.1.evil.example:{port}", "null",
    ]
    refused = {origin: handshake_status(url, {"Origin": origin, "Cookie": cookie}) for origin in forged}
    assert refused == {origin: 403 for origin in forged}
    # No Origin at all (a program that names none) is refused too.
    assert handshake_status(url, {"Cookie": cookie}) == 403

    # The page's own origin: admitted, and signed in by the cookie (an anonymous socket gets not_authenticated).
    with connect(url, additional_headers={"Origin": live, "Cookie": cookie}, open_timeout=10) as ws:
        ws.send(json.dumps({"type": "cancel"}))
        assert json.loads(ws.recv(timeout=10))["code"] == "nothing_to_cancel"


@LIVE
def test_a_message_over_the_limit_gets_an_error_event_then_close_1009(live, alice):
    """A 5 MB frame used to close the socket with nothing said; a 100 KB one is refused and the socket stays usable."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    from tests.helpers import api_token

    token = api_token(alice)
    url = live.replace("http://", "ws://") + f"/ws/chat/?token={token}"
    with connect(url, origin=live, open_timeout=10, additional_headers={"Accept-Language": "en"}) as ws:
        ws.send(json.dumps({"type": "ask", "kb_ids": [1], "question": "价" * 40_000}))  # 120 KB: over the ask limit
        event = json.loads(ws.recv(timeout=10))
        assert (event["type"], event["code"], event["limit"]) == ("error", "too_large", 64 * 1024)
        ws.send(json.dumps({"type": "cancel"}))
        assert json.loads(ws.recv(timeout=10))["code"] == "nothing_to_cancel"

        ws.send("x" * (5 * 1024 * 1024))
        event = json.loads(ws.recv(timeout=10))
        assert (event["type"], event["code"], event["limit"]) == ("error", "too_large", 1024 * 1024)
        assert "1048576 bytes" in event["message"]
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    # In the handshake's language: Chinese by default.
    with connect(url, origin=live, open_timeout=10) as ws:
        ws.send(b"\0" * (2 * 1024 * 1024))
        assert "连接已关闭" in json.loads(ws.recv(timeout=10))["message"]


@LIVE
def test_a_message_just_under_the_limit_is_read(live, alice):
    from websockets.sync.client import connect

    from tests.helpers import api_token

    token = api_token(alice)
    url = live.replace("http://", "ws://") + f"/ws/chat/?token={token}"
    with connect(url, origin=live, open_timeout=10) as ws:
        ws.send('{"type": "dance", "pad": "' + "x" * (1024 * 1024 - 100) + '"}')
        # Read by the server (not closed), then refused by the consumer's own, smaller limit.
        assert json.loads(ws.recv(timeout=10))["code"] == "too_large"
        ws.send(json.dumps({"type": "cancel"}))
        assert json.loads(ws.recv(timeout=10))["code"] == "nothing_to_cancel"


# --- the rule, on handshake scopes -------------------------------------------------------------------

def scope(origin: str | list[str] | None, *, host: str = "testserver", scheme: str = "ws", extra=()) -> dict:
    origins = [origin] if isinstance(origin, str) else (origin or [])
    headers = [(b"host", host.encode()), *((b"origin", o.encode()) for o in origins), *extra]
    return {"type": "websocket", "scheme": scheme, "path": "/ws/chat/", "query_string": b"", "headers": headers,
            "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 50000)}


@pytest.mark.parametrize(("handshake", "allowed"), [
    (scope("http://testserver"), True),
    (scope("http://testserver:80"), False),  # Django compares the origin as a string, as its CSRF check does
    (scope("https://testserver"), False),
    (scope("http://testserver:9999"), False),
    (scope("http://127.0.0.1:8000", host="127.0.0.1:8000"), True),
    (scope("http://127.0.0.1:8001", host="127.0.0.1:8000"), False),
    # wss: the page must be https
    (scope("https://testserver", scheme="wss"), True),
    (scope("http://testserver", scheme="wss"), False),
    # a Host outside ALLOWED_HOSTS is no origin of the site's
    (scope("http://evil.example", host="evil.example"), False),
    (scope(None), False),
    (scope(["http://testserver", "http://testserver"]), False),
    (scope("null"), False),
])
def test_the_origin_must_be_the_sites_own(handshake, allowed):
    from config.ws_origin import origin_allowed

    assert origin_allowed(handshake) is allowed


def test_trusted_origins_and_the_tls_proxy_header_count_as_for_csrf(settings):
    from config.ws_origin import origin_allowed

    settings.CSRF_TRUSTED_ORIGINS = ["https://kb.example.com", "https://*.corp.example.com"]
    assert origin_allowed(scope("https://kb.example.com"))
    assert origin_allowed(scope("https://team.corp.example.com"))
    assert not origin_allowed(scope("http://kb.example.com"))
    assert not origin_allowed(scope("https://corp.example.com.evil.example"))
    # Behind a TLS proxy (ZHIKU_BEHIND_TLS_PROXY=1): its X-Forwarded-Proto makes a plain ws handshake https.
    proxied = scope("https://testserver", extra=[(b"x-forwarded-proto", b"https")])
    assert not origin_allowed(proxied)
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert origin_allowed(proxied)
    assert not origin_allowed(scope("http://testserver", extra=[(b"x-forwarded-proto", b"https")]))
