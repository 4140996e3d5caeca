"""``/mcp/`` in the project's ASGI application: the key checked first, then the MCP SDK's streamable HTTP transport.

``MCPRoute`` sends exactly ``/mcp/`` and ``/mcp/kb/<id>/`` (with or without the last slash) to ``serve``, anything
else to Django. ``serve`` checks the Host against ``ALLOWED_HOSTS``, answers a CORS preflight (assistants/mcp_auth/
cors.py), and checks the ``Authorization: Bearer`` credential (an API key, or an OAuth token issued for this very
address: assistants/mcp_auth/bearer.py) before the SDK reads a byte of the body: 401 with the challenge naming the
resource's metadata (RFC 9728 §5.1), 429, and 405 for anything but a POST, in the API's error shape. Then it runs a
stateless session manager with JSON responses for that request alone: daphne sends no lifespan events to start a
shared one from, and nothing outlives a request (docs/integrations.md "Design, and why this way").
"""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils import translation
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from assistants.mcp_auth.bearer import mcp_authenticate
from assistants.mcp_auth.cors import headers_for, is_preflight
from assistants.mcp_auth.resources import challenge, mcp_target, origin_of_scope, resource_url
from assistants.mcp_kb_server import kb_server
from assistants.mcp_server import CALLER, server
from assistants.mcp_tools import Caller
from chat.services import in_thread
from core.errors import CODES, ApplicationError, CoreError, message
from core.http.i18n import language_from_scope

Message = MutableMapping[str, Any]
Send = Callable[[Message], Awaitable[None]]
"""ASGI's ``send``, as the SDK's transport types it."""
METHODS = "POST, OPTIONS"
MAX_BODY_BYTES = 1024 * 1024
"""A tool call's JSON body: a question and a few filters, far below the SDK's 4 MiB default."""


def _header(scope, name: bytes) -> str:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return value.decode("latin-1")
    return ""


def _host_allowed(scope) -> bool:
    """The Host header passes ``ALLOWED_HOSTS`` (Django's own rule, its DEBUG defaults included)."""
    allowed = settings.ALLOWED_HOSTS or ([".localhost", "127.0.0.1", "[::1]"] if settings.DEBUG else [])
    domain, _port = split_domain_port(_header(scope, b"host"))
    return bool(domain) and validate_host(domain, allowed)


async def _refuse(send, status: int, body: dict, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    data = json.dumps({"error": body}, ensure_ascii=False).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": data})


async def _refuse_error(send, exc: ApplicationError, origin: str, kb_id: int | None) -> None:
    headers = []
    if exc.status_code == 401:
        # A credential sent and refused is invalid_token (RFC 6750 §3.1), described in English (the header is ASCII).
        sent = exc.code != "key_missing"
        with translation.override("en"):
            description = CODES[exc.code].text() if sent else ""
        headers.append((b"www-authenticate", challenge(origin, kb_id, error="invalid_token" if sent else "",
                                                       description=description)))
    if "retry_after" in exc.extra:
        headers.append((b"retry-after", str(exc.extra["retry_after"]).encode()))
    await _refuse(send, exc.status_code, {"code": exc.code, "message": str(exc.message), **exc.extra}, headers)


async def _authenticated(scope, resource: str, kb_id: int | None) -> Caller:
    """The caller of this request; ``key_missing`` / ``key_invalid`` / ``token_invalid`` / ``token_wrong_resource``
    (401), ``key_rate_limited`` (429)."""
    key, row, visitor = await in_thread(mcp_authenticate)(_header(scope, b"authorization"), resource=resource,
                                                          kb_id=kb_id)
    return Caller(key=key, row=row, language=translation.get_language(), visitor=visitor)


def with_headers(send: Send, headers: Sequence[tuple[str, str]]) -> Send:
    """``send`` that adds ``headers`` (the CORS ones) to the response's start."""
    extra = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]

    async def wrapped(message_: Message) -> None:
        if message_["type"] == "http.response.start":
            message_ = {**message_, "headers": [*message_.get("headers", []), *extra]}
        await send(message_)

    return wrapped


def json_rpc_errors(send: Send) -> Send:
    """``send`` that turns the SDK's plain-text HTTP errors (a wrong Content-Type or Accept, a body it cannot
    read) into JSON-RPC error objects with ``Content-Type: application/json``, the status kept."""
    held: dict[str, Any] = {}

    async def wrapped(message_: Message) -> None:
        if message_["type"] == "http.response.start" and message_.get("status", 200) >= 400:
            types = [v for k, v in message_.get("headers", []) if k.lower() == b"content-type"]
            if not types or not types[0].lower().startswith(b"application/json"):
                held["start"], held["body"] = message_, b""
                return
        if "start" in held and message_["type"] == "http.response.body":
            held["body"] += message_.get("body", b"")
            if message_.get("more_body"):
                return
            start = held.pop("start")
            text = held.pop("body").decode("utf-8", "replace").strip() or message(CoreError.BAD_REQUEST)
            code = -32700 if "parse" in text.lower() or "json" in text.lower() else -32600
            data = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": text}},
                              ensure_ascii=False).encode()
            await send({**start, "headers": [
                *[(k, v) for k, v in start.get("headers", []) if k.lower() not in (b"content-type", b"content-length")],
                (b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
            await send({"type": "http.response.body", "body": data})
            return
        await send(message_)

    return wrapped


async def serve(scope, receive, send) -> None:
    """One MCP request: refused before the SDK sees it, or handled by a stateless session manager of its own."""
    target = mcp_target(scope.get("path", ""))
    kb_id = target[1] if target else None
    method = scope.get("method")
    with translation.override(language_from_scope(scope)):
        if not _host_allowed(scope):
            await _refuse(send, 400, {"code": "bad_request", "message": message(CoreError.BAD_REQUEST)})
            return
        origin = _header(scope, b"origin")
        if is_preflight(method or "", _header(scope, b"access-control-request-method")):
            await with_headers(send, headers_for(origin, preflight=True, methods=METHODS))(
                {"type": "http.response.start", "status": 204, "headers": [(b"allow", METHODS.encode())]})
            await send({"type": "http.response.body", "body": b""})
            return
        send = with_headers(send, headers_for(origin, preflight=False, methods=METHODS))
        base = origin_of_scope(scope, _header(scope, b"host"))
        try:
            caller = await _authenticated(scope, resource_url(base, kb_id), kb_id)
        except ApplicationError as exc:
            await _refuse_error(send, exc, base, kb_id)
            return
        if method != "POST":
            # Stateless: no session to end (DELETE) and no server-sent stream to open (GET), which the SDK would
            # hold open with nothing ever to send. The transport's rule for a server without one: 405.
            await _refuse(send, 405, {"code": "method_not_allowed", "message": message(CoreError.METHOD_NOT_ALLOWED)},
                          [(b"allow", b"POST")])
            return
    token = CALLER.set(caller)
    chosen = kb_server if kb_id is not None else server
    try:
        manager = StreamableHTTPSessionManager(
            app=chosen._lowlevel_server,  # noqa: SLF001 - MCPServer builds the same manager around it (streamable_http_app)
            stateless=True, json_response=True, max_request_body_size=MAX_BODY_BYTES)
        async with manager.run():
            await manager.handle_request(scope, receive, json_rpc_errors(send))
    finally:
        CALLER.reset(token)


class MCPRoute:
    """ASGI: ``/mcp/`` and ``/mcp/kb/<id>/`` to the MCP servers (``serve``), anything else to ``app``."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and mcp_target(scope.get("path", "")) is not None:
            await serve(scope, receive, send)
        else:
            await self.app(scope, receive, send)
