"""Issue 8: request-line and header limits are answered with 414 and 431 (JSON errors), by the real server."""
from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

import pytest

from tests.browser import daphne

pytestmark = pytest.mark.django_db(transaction=True)


def raw_request(base: str, target: str, headers: dict[str, str]) -> tuple[int, bytes]:
    """Send one request by hand (clients refuse to send what is tested here); (status, body)."""
    parts = urlsplit(base)
    lines = [f"GET {target} HTTP/1.1", f"Host: {parts.hostname}:{parts.port}", "Connection: close",
             *(f"{k}: {v}" for k, v in headers.items())]
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


@pytest.fixture(scope="module")
def base(tmp_path_factory, django_db_blocker):
    with django_db_blocker.unblock(), daphne(tmp_path_factory.mktemp("limits") / "daphne.log") as url:
        yield url


def test_a_long_url_is_414(base):
    status, body = raw_request(base, "/api/kbs/?q=" + "x" * 9000, {})
    assert status == 414 and json.loads(body)["error"]["code"] == "uri_too_long"


@pytest.mark.parametrize("headers", [{"X-Big": "y" * 13000}, {f"X-H{i}": "1" for i in range(150)}])
def test_too_many_or_too_large_headers_are_431(base, headers):
    status, body = raw_request(base, "/api/kbs/", headers)
    assert status == 431 and json.loads(body)["error"]["code"] == "headers_too_large"


def test_requests_within_the_limits_reach_the_application(base):
    status, body = raw_request(base, "/api/kbs/?q=" + "x" * 2000, {"X-Ok": "z" * 2000})
    assert status == 401 and json.loads(body)["error"]["code"] == "not_authenticated"
