"""The websocket handshake's Origin, checked by the rule Django's CSRF origin check uses.

A browser sends a page's cookies with a websocket handshake to any site, whatever page opened it;
only the ``Origin`` header says which page that was. Channels' ``AllowedHostsOriginValidator``
compares its host name with ``ALLOWED_HOSTS`` and nothing else, so a page on
``http://localhost:9999``, ``https://127.0.0.1:4443`` or ``http://127.0.0.1:1`` could open a signed-in
user's chat on ``http://127.0.0.1:8000``.

Here the handshake is read as the HTTP request it is and given to Django's own check
(``CsrfViewMiddleware._origin_verified``, the one every POST with an Origin passes): scheme, host
and port must be the request's own (``http``/``https`` as Django sees the request: a ``wss``
handshake, or ``X-Forwarded-Proto`` under ``SECURE_PROXY_SSL_HEADER``, is ``https``; the host as
``request.get_host()`` validates it against ``ALLOWED_HOSTS``), or one of ``CSRF_TRUSTED_ORIGINS``
(exactly, or by its ``https://*.example.com`` subdomain rule). A handshake without exactly one
Origin is refused: every browser sends one, and a program states its server's (docs/chat.md).
A refused handshake is closed before it is accepted (HTTP 403).
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
    return CsrfViewMiddleware(lambda request: HttpResponse())._origin_verified(request)


class OriginCheck:
    """ASGI middleware: websocket handshakes from another origin are refused; other scopes pass."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not origin_allowed(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
