"""Request bodies refused as they arrive: 413 before the rest is read, in each protocol's own error shape.

Twisted reads a whole body (into memory, or a temporary file) before daphne hands the request on, and Django
authenticates only once it has it, so a huge body cost its size before anyone asked who sent it. ``install()``
hooks daphne's request where Twisted calls it while reading: ``gotLength`` (a ``Content-Length`` over the limit
is refused at once) and ``handleContentChunk`` (a chunked body is counted as it streams). A refused request is
answered 413 with ``Connection: close`` and never reaches the application.

Every request gets its route family's small limit, whoever sends it. Only the routes that take files
(``UPLOADS``; the admin's upload page, ``ADMIN_UPLOAD``) allow a file-sized body, and only to a request that
carries a valid credential: an API token or a live session (the admin's: a staff member's session). That is
asked only when a body would pass the small limit: the connection stops being read (TCP back-pressure) while a
thread looks the credential up, then the body goes on under the larger limit or is refused under the small one.
Each route family's limit and error shape: docs/api.md, "Request size"; each route's own, smaller checks still
answer in their place.
"""
from __future__ import annotations

import functools
import json
import logging
import re
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from typing import Any

from django.conf import settings
from django.db import close_old_connections
from django.utils import translation

from accounts.auth import user_for_key, user_for_session
from core.errors import CoreError, message
from core.http.i18n import language_from_scope

logger = logging.getLogger(__name__)

# The routes that take files (knowledge/api/urls.py: document-list and document-preview; the admin's
# knowledge_document_upload): tests/config/test_body_limits.py checks them against the URLconf.
UPLOADS = re.compile(r"^/api/kbs/\d+/documents/(?:preview/)?$")
ADMIN_UPLOAD = re.compile(r"^/admin/knowledge/document/upload/$")
MiB = 1024 * 1024


@dataclass(frozen=True)
class Family:
    limit: int                      # whoever sends the request
    shape: str                      # rest, openai, dify, jsonrpc
    signed_in: int | None = None    # the larger limit of a request with a valid credential (routes that take files)
    staff: bool = False             # that credential must be a staff member's session (the admin)


def upload_limit() -> int:
    """The largest body an upload may send: every file at its limit, and the form around them."""
    return settings.ZHIKU_MAX_UPLOAD_BYTES * settings.ZHIKU_MAX_FILES_PER_UPLOAD + MiB


def family(path: str) -> Family:
    """The limits and error shape of the route family ``path`` belongs to."""
    if path.startswith("/v1/"):
        from assistants.openai_api import MAX_BODY_BYTES
        return Family(MAX_BODY_BYTES, "openai")
    if path.startswith("/dify/"):
        from assistants.dify import MAX_BODY_BYTES as DIFY_BYTES
        return Family(DIFY_BYTES, "dify")
    if path == "/mcp" or path.startswith("/mcp/"):
        from assistants.mcp_http import MAX_BODY_BYTES as MCP_BYTES
        return Family(MCP_BYTES, "jsonrpc")
    if path.startswith("/bots/"):
        from bots.callback import MAX_BODY_BYTES as BOT_BYTES
        return Family(BOT_BYTES, "rest")
    if UPLOADS.match(path):
        return Family(settings.DATA_UPLOAD_MAX_MEMORY_SIZE, "rest", signed_in=upload_limit())
    if ADMIN_UPLOAD.match(path):
        return Family(settings.DATA_UPLOAD_MAX_MEMORY_SIZE, "rest", signed_in=upload_limit(), staff=True)
    return Family(settings.DATA_UPLOAD_MAX_MEMORY_SIZE, "rest")


def credentials(headers: list[tuple[bytes, bytes]], *, staff: bool) -> tuple[str, str] | None:
    """The credential a request carries, ("token", key) or ("session", key), read from its headers alone.

    A token in ``Authorization: Token <key>`` (the API's; not the admin's, which signs in with a session only),
    else the session cookie. None: the request carries neither, and no lookup is needed to refuse it."""
    cookie_name = settings.SESSION_COOKIE_NAME.encode()
    session = None
    for name, value in headers:
        if name == b"authorization" and not staff:
            scheme, _, key = value.decode("latin-1").strip().partition(" ")
            if scheme.lower() == "token" and key.strip():
                return "token", key.strip()
        elif name == b"cookie" and cookie_name in value:
            try:
                jar = SimpleCookie(value.decode("latin-1"))
            except CookieError:
                continue
            if settings.SESSION_COOKIE_NAME in jar:
                session = jar[settings.SESSION_COOKIE_NAME].value
    return ("session", session) if session else None


def signed_in(credential: tuple[str, str], *, staff: bool) -> bool:
    """Whether ``credential`` is a live one of an active user (a staff member, for ``staff``): database access,
    run in a thread of the server's pool, never on its event loop."""
    close_old_connections()
    try:
        kind, key = credential
        user = user_for_key(key) if kind == "token" else user_for_session(key)
        return bool(user.is_authenticated and user.is_active and (user.is_staff or not staff))
    except Exception:  # noqa: BLE001 - a lookup that fails (the database away) leaves the small limit in place
        logger.warning("the credential of a large request could not be checked: the small limit applies", exc_info=True)
        return False
    finally:
        close_old_connections()


def error_body(shape: str, text: str) -> dict:
    """The 413 body ``body_too_large`` in the protocol's own shape."""
    if shape == "openai":
        return {"error": {"message": text, "type": "invalid_request_error", "param": None, "code": "body_too_large"}}
    if shape == "dify":
        return {"error_code": 413, "error_msg": text, "code": "body_too_large"}
    if shape == "jsonrpc":
        return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": text,
                                                        "data": {"code": "body_too_large"}}}
    return {"error": {"code": "body_too_large", "message": text}}


def refusal(path: str, headers: list[tuple[bytes, bytes]], *, limit: int | None = None) -> bytes:
    """The whole HTTP/1.1 413 response for a body over ``limit`` (default: ``path``'s limit for anyone), in the
    request's language. On a route that takes files, the message says how much a signed-in request may send."""
    route = family(path)
    limit = route.limit if limit is None else limit
    with translation.override(language_from_scope({"headers": headers})):
        if route.signed_in is not None and limit < route.signed_in:
            text = str(message(CoreError.BODY_TOO_LARGE, "unverified", limit=limit, upload_limit=route.signed_in))
        else:
            text = str(message(CoreError.BODY_TOO_LARGE, "stream", limit=limit))
    body = json.dumps(error_body(route.shape, text), ensure_ascii=False).encode()
    head = (b"HTTP/1.1 413 Content Too Large\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n")
    return head + body


def _path(request) -> str:
    raw = getattr(request.channel, "_path", b"") or b""
    return raw.split(b"?", 1)[0].decode("latin-1")


def _headers(request) -> list[tuple[bytes, bytes]]:
    return [(k.lower(), v) for k, values in request.requestHeaders.getAllRawHeaders() for v in values]


# daphne's own methods, which the hooks below call (``install``).
_original: dict[str, Any] = {}


def _connected(request) -> bool:
    channel = request.channel
    return channel is not None and channel.transport is not None and not getattr(request, "_disconnected", False)


def _refuse(request) -> None:
    request._zhiku_refused = True
    if _connected(request):
        request.channel.transport.write(refusal(request._zhiku_path, _headers(request), limit=request._zhiku_limit))
        request.channel.loseConnection()          # stops reading: the rest of the body is never received


def _over(request) -> bool:
    """Whether the body (declared or received so far) is past the limit now in force."""
    declared = request._zhiku_length
    return (declared is not None and declared > request._zhiku_limit) or request._zhiku_received > request._zhiku_limit


def _ask(request) -> bool:
    """Past the small limit on a route that takes files: look the credential up, reading nothing meanwhile.
    False when there is nothing to ask (no credential, not such a route, or asked already)."""
    from twisted.internet.threads import deferToThread

    route = request._zhiku_family
    if route.signed_in is None or request._zhiku_asked:
        return False
    request._zhiku_asked = True
    credential = credentials(_headers(request), staff=route.staff)
    if credential is None:
        return False
    request._zhiku_pending = True
    request.channel.transport.pauseProducing()    # TCP back-pressure: the client waits, nothing piles up here
    deferToThread(signed_in, credential, staff=route.staff).addBoth(
        lambda result: _answered(request, route, result is True))
    return True


def _answered(request, route: Family, ok: bool) -> None:
    """The lookup's answer, back on the server's thread: the larger limit, or the refusal under the small one."""
    request._zhiku_pending = False
    if ok and route.signed_in is not None:
        request._zhiku_limit = route.signed_in
    if not _connected(request):
        return
    if _over(request):
        _refuse(request)
        return
    request.channel.transport.resumeProducing()
    if (waiting := request._zhiku_waiting) is not None:
        request._zhiku_waiting = None
        _original["requestReceived"](request, *waiting)


def _got_length(self, length) -> None:
    self._zhiku_path = _path(self)
    self._zhiku_family = family(self._zhiku_path)
    self._zhiku_limit = self._zhiku_family.limit
    self._zhiku_length = length
    self._zhiku_received = 0
    self._zhiku_refused = self._zhiku_pending = self._zhiku_asked = False
    self._zhiku_waiting = None
    _original["gotLength"](self, length)
    route = self._zhiku_family
    if length is not None and length > (route.signed_in or route.limit):
        _refuse(self)                           # over even a signed-in request's limit: no lookup needed
    elif _over(self) and not _ask(self):
        _refuse(self)


def _handle_content_chunk(self, data) -> None:
    if getattr(self, "_zhiku_refused", False):
        return
    self._zhiku_received = getattr(self, "_zhiku_received", 0) + len(data)
    route = getattr(self, "_zhiku_family", None)
    if route is not None and _over(self):
        if self._zhiku_pending:
            # Read before the pause took hold (at most one read of the socket): kept until the lookup answers.
            if self._zhiku_received > (route.signed_in or route.limit):
                _refuse(self)
                return
        elif not _ask(self):
            _refuse(self)
            return
    _original["handleContentChunk"](self, data)


def _request_received(self, command, path, version) -> None:
    if getattr(self, "_zhiku_refused", False):
        return                             # answered already: the application never sees it
    if getattr(self, "_zhiku_pending", False):
        self._zhiku_waiting = (command, path, version)    # the whole body came before the lookup answered
        return
    _original["requestReceived"](self, command, path, version)


def install() -> None:
    """Hook daphne's requests (idempotent; nothing to do without daphne)."""
    try:
        from daphne.http_protocol import WebRequest
    except ImportError:  # pragma: no cover - daphne is a dependency
        return
    if getattr(WebRequest, "_zhiku_body_limits", False):
        return
    for name, hook in (("gotLength", _got_length), ("handleContentChunk", _handle_content_chunk),
                       ("requestReceived", _request_received)):
        _original[name] = getattr(WebRequest, name)
        setattr(WebRequest, name, functools.wraps(_original[name])(hook))
    WebRequest._zhiku_body_limits = True
