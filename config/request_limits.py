"""Request-line and header limits, answered with 414 and 431 before Django sees the request.

daphne (Twisted) closes a connection whose request line or header block passes
its own, larger limits with a bare 400, or not at all; Django has no limit of its
own. This ASGI wrapper answers what a client can act on: 414 URI Too Long and
431 Request Header Fields Too Large, as JSON errors like every other API error.
"""
from __future__ import annotations

import json

from django.conf import settings
from django.utils import translation

from core.errors import CoreError, message
from core.http.i18n import language_from_scope


def _reject(status: int, code: str, message: str):
    body = json.dumps({"error": {"code": code, "message": message}}, ensure_ascii=False).encode()

    async def respond(send) -> None:
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})

    return respond


def check(scope) -> tuple[int, str, str] | None:
    """(status, code, message) when the request passes a limit, else None."""
    target = len(scope.get("raw_path") or scope.get("path", "").encode()) + len(scope.get("query_string") or b"")
    if target > settings.ZHIKU_MAX_URL_BYTES:
        return 414, "uri_too_long", message(CoreError.URI_TOO_LONG, limit=settings.ZHIKU_MAX_URL_BYTES)
    headers = scope.get("headers") or []
    size = sum(len(name) + len(value) + 4 for name, value in headers)
    if size > settings.ZHIKU_MAX_HEADER_BYTES or len(headers) > settings.ZHIKU_MAX_HEADER_COUNT:
        return 431, "headers_too_large", message(CoreError.HEADERS_TOO_LARGE, count=settings.ZHIKU_MAX_HEADER_COUNT,
                                                 size=settings.ZHIKU_MAX_HEADER_BYTES)
    return None


def check_in_language(scope) -> tuple[int, str, str] | None:
    """``check`` with its message in the language the request asks for (the language cookie, Accept-Language, else zh-hans)."""
    if check(scope) is None:  # the usual case: no language to look up
        return None
    with translation.override(language_from_scope(scope)):
        return check(scope)


class RequestLimits:
    """ASGI middleware: HTTP requests over the limits get 414/431; websocket handshakes are closed."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        # Before Django's LocaleMiddleware: the message's language comes from the scope's Accept-Language.
        if scope["type"] in ("http", "websocket") and (over := check_in_language(scope)) is not None:
            if scope["type"] == "http":
                await _reject(*over)(send)
            else:
                await send({"type": "websocket.close", "code": 1009})
            return
        await self.app(scope, receive, send)
