"""Request bodies refused as they arrive: 413 before the rest is read, in each protocol's own error shape.

Twisted reads a whole request body (into memory, or a temporary file past 100 kB) before daphne hands the
request to the application, and daphne then queues all of it for the application at once: a 200 MiB body
to any route cost the server its size in memory before Django could answer 401 or 413. ``install()`` hooks
daphne's request at the two points Twisted calls while it reads: ``gotLength`` (the headers are in: a
``Content-Length`` over the route's limit is refused at once) and ``handleContentChunk`` (a chunked body is
counted as it streams and refused when it passes the limit). A refused request is answered 413 with
``Connection: close``, Twisted stops reading from the socket, and the application never sees the request.

The limit of each route family (docs/api.md, "Request size"):

| paths | limit | error shape |
|---|---|---|
| ``/v1/`` | ``assistants.openai_api.MAX_BODY_BYTES`` | OpenAI's ``{"error": {"message", "type", "param", "code"}}`` |
| ``/dify/`` | ``assistants.dify.MAX_BODY_BYTES`` | Dify's ``{"error_code", "error_msg"}`` |
| ``/mcp`` | ``assistants.mcp_http.MAX_BODY_BYTES`` | a JSON-RPC error (``-32600``) |
| ``/api/kbs/<id>/documents/…``, ``/admin/`` | ``ZHIKU_MAX_UPLOAD_BYTES`` × ``ZHIKU_MAX_FILES_PER_UPLOAD`` + 1 MiB | the REST API's ``{"error": {"code", "message"}}`` |
| anything else | ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (10 MiB) | the REST API's |

Each route's own, smaller checks (a JSON body over ``ZHIKU_MAX_JSON_BYTES``, a chat body over 64 KiB) still
answer in their place; this layer only makes sure nothing larger than the route could accept is read.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass

from django.conf import settings
from django.utils import translation

from config.i18n import language_from_scope
from knowledge.errors import message

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
    def gotLength(self, length):  # noqa: N802 (Twisted's naming)
        self._zhiku_path = _path(self)
        self._zhiku_limit = family(self._zhiku_path).limit
        self._zhiku_received = 0
        self._zhiku_refused = False
        got_length(self, length)
        if length is not None and length > self._zhiku_limit:
            refuse(self)

    @functools.wraps(content_chunk)
    def handleContentChunk(self, data):  # noqa: N802
        if getattr(self, "_zhiku_refused", False):
            return
        self._zhiku_received = getattr(self, "_zhiku_received", 0) + len(data)
        if self._zhiku_received > getattr(self, "_zhiku_limit", self._zhiku_received):
            refuse(self)
            return
        content_chunk(self, data)

    @functools.wraps(received)
    def requestReceived(self, command, path, version):  # noqa: N802
        if getattr(self, "_zhiku_refused", False):
            return                             # answered already: the application never sees it
        received(self, command, path, version)

    WebRequest.gotLength = gotLength
    WebRequest.handleContentChunk = handleContentChunk
    WebRequest.requestReceived = requestReceived
    WebRequest._zhiku_body_limits = True
