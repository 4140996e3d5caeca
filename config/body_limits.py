"""Request bodies refused as they arrive: 413 before the rest is read, in each protocol's own error shape.

Twisted reads a whole body (into memory, or a temporary file) before daphne hands the request on, so a huge body
cost its size before Django could answer. ``install()`` hooks daphne's request where Twisted calls it while
reading: ``gotLength`` (a ``Content-Length`` over the route's limit is refused at once) and ``handleContentChunk``
(a chunked body is counted as it streams). A refused request is answered 413 with ``Connection: close`` and never
reaches the application. Each route family's limit and error shape: docs/api.md, "Request size"; each route's
own, smaller checks still answer in their place.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass

from django.conf import settings
from django.utils import translation

from core.errors import message
from core.http.i18n import language_from_scope

UPLOADS = re.compile(r"^/(api/kbs/\d+/documents/|admin/)")
MiB = 1024 * 1024


@dataclass(frozen=True)
class Family:
    limit: int
    shape: str          # rest, openai, dify, jsonrpc


def family(path: str) -> Family:
    """The limit and error shape of the route family ``path`` belongs to."""
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
        return Family(settings.ZHIKU_MAX_UPLOAD_BYTES * settings.ZHIKU_MAX_FILES_PER_UPLOAD + MiB, "rest")
    return Family(settings.DATA_UPLOAD_MAX_MEMORY_SIZE, "rest")


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


def refusal(path: str, headers: list[tuple[bytes, bytes]]) -> bytes:
    """The whole HTTP/1.1 413 response for a body over ``path``'s limit, in the request's language."""
    route = family(path)
    with translation.override(language_from_scope({"headers": headers})):
        text = str(message("body_too_large", "stream", limit=route.limit))
    body = json.dumps(error_body(route.shape, text), ensure_ascii=False).encode()
    head = (b"HTTP/1.1 413 Content Too Large\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n")
    return head + body


def _path(request) -> str:
    raw = getattr(request.channel, "_path", b"") or b""
    return raw.split(b"?", 1)[0].decode("latin-1")


def install() -> None:
    """Hook daphne's requests (idempotent; nothing to do without daphne)."""
    try:
        from daphne.http_protocol import WebRequest
    except ImportError:  # pragma: no cover - daphne is a dependency
        return
    if getattr(WebRequest, "_zhiku_body_limits", False):
        return
    got_length, content_chunk, received = WebRequest.gotLength, WebRequest.handleContentChunk, WebRequest.requestReceived

    def refuse(self) -> None:
        self._zhiku_refused = True
        headers = [(k.lower(), v) for k, values in self.requestHeaders.getAllRawHeaders() for v in values]
        channel = self.channel
        if channel is not None and channel.transport is not None:
            channel.transport.write(refusal(self._zhiku_path, headers))
            channel.loseConnection()          # stops reading: the rest of the body is never received

    @functools.wraps(got_length)
    def gotLength(self, length):
        self._zhiku_path = _path(self)
        self._zhiku_limit = family(self._zhiku_path).limit
        self._zhiku_received = 0
        self._zhiku_refused = False
        got_length(self, length)
        if length is not None and length > self._zhiku_limit:
            refuse(self)

    @functools.wraps(content_chunk)
    def handleContentChunk(self, data):
        if getattr(self, "_zhiku_refused", False):
            return
        self._zhiku_received = getattr(self, "_zhiku_received", 0) + len(data)
        if self._zhiku_received > getattr(self, "_zhiku_limit", self._zhiku_received):
            refuse(self)
            return
        content_chunk(self, data)

    @functools.wraps(received)
    def requestReceived(self, command, path, version):
        if getattr(self, "_zhiku_refused", False):
            return                             # answered already: the application never sees it
        received(self, command, path, version)

    WebRequest.gotLength = gotLength
    WebRequest.handleContentChunk = handleContentChunk
    WebRequest.requestReceived = requestReceived
    WebRequest._zhiku_body_limits = True
