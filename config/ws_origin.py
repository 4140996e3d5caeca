"""The websocket handshake's Origin, checked by the rule Django's CSRF origin check uses.

A browser sends a site's cookies with a websocket handshake whatever page opened it; only ``Origin`` names
that page, and Channels' ``AllowedHostsOriginValidator`` compares its host name alone (a page on another port
or scheme of the same host passed). Here the handshake is read as the HTTP request it is and given to
``CsrfViewMiddleware._origin_verified``: scheme, host and port must be the request's own, or one of
``CSRF_TRUSTED_ORIGINS``. A handshake without exactly one Origin is refused (every browser sends one; a
program states its server's, docs/chat.md); a refused one is closed before it is accepted (HTTP 403).
"""
from __future__ import annotations

import io

from channels.security.websocket import WebsocketDenier
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse
from django.middleware.csrf import CsrfViewMiddleware

_HTTP_SCHEME = {"wss": "https", "https": "https"}


def handshake_request(scope) -> ASGIRequest:
    """The websocket handshake as Django's HttpRequest (a GET of its path, with its headers)."""
    http_scope = {**scope, "type": "http", "method": "GET", "scheme": _HTTP_SCHEME.get(scope.get("scheme", ""), "http")}
    return ASGIRequest(http_scope, io.BytesIO())


def origin_allowed(scope) -> bool:
    """Whether the handshake's Origin passes Django's CSRF origin check."""
    origins = [value for name, value in scope.get("headers") or [] if name.lower() == b"origin"]
    if len(origins) != 1:
        return False
    request = handshake_request(scope)
    # A new instance each time: its trusted-origin lists are cached per instance, from the settings.
    return CsrfViewMiddleware(lambda request: HttpResponse())._origin_verified(request)  # type: ignore[attr-defined]  # Django's own origin rule; private, so not in the stubs


class OriginCheck:
    """ASGI middleware: websocket handshakes from another origin are refused; other scopes pass."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not origin_allowed(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
