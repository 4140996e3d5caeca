"""CORS for browser MCP clients: ``/mcp/``, the well-known documents and the OAuth endpoints, for the origins in
``ZHIKU_MCP_CORS_ORIGINS`` only (exact ``scheme://host[:port]``; the Fetch standard's CORS protocol).

A listed origin gets ``Access-Control-Allow-Origin`` naming it (never ``*``: the toolkit's own ``*`` on its metadata
is replaced), ``Vary: Origin``, and ``Mcp-Session-Id`` and ``WWW-Authenticate`` exposed so a client can read the
401's challenge; its preflight (``OPTIONS`` with ``Access-Control-Request-Method``) is answered 204 with the methods
and headers allowed. Any other origin gets no CORS header at all, so its browser keeps the answer from the page.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.http import HttpRequest, HttpResponse

ALLOW_HEADERS = "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID"
EXPOSE_HEADERS = "Mcp-Session-Id, WWW-Authenticate"
MAX_AGE = "600"


def origin_allowed(origin: str) -> bool:
    return bool(origin) and origin in settings.ZHIKU_MCP_CORS_ORIGINS


def headers_for(origin: str, *, preflight: bool, methods: str) -> list[tuple[str, str]]:
    """The CORS headers of an answer to ``origin`` (none when it is not listed)."""
    if not origin_allowed(origin):
        return [("Vary", "Origin")]
    found = [("Access-Control-Allow-Origin", origin), ("Vary", "Origin"),
             ("Access-Control-Expose-Headers", EXPOSE_HEADERS)]
    if preflight:
        found += [("Access-Control-Allow-Methods", methods), ("Access-Control-Allow-Headers", ALLOW_HEADERS),
                  ("Access-Control-Max-Age", MAX_AGE)]
    return found


def is_preflight(method: str, request_method: str) -> bool:
    return method == "OPTIONS" and bool(request_method)


def cors(methods: str) -> Callable:
    """A Django view with CORS for the listed origins: preflights answered 204, other answers given the headers."""
    def decorate(view: Callable) -> Callable:
        @wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            origin = request.headers.get("Origin", "")
            preflight = is_preflight(request.method or "", request.headers.get("Access-Control-Request-Method", ""))
            response = HttpResponse(status=204) if preflight else view(request, *args, **kwargs)
            for name in [h for h in response.headers if h.lower().startswith("access-control-")]:
                del response.headers[name]
            for name, value in headers_for(origin, preflight=preflight, methods=methods):
                if name == "Vary" and "Vary" in response.headers:
                    value = f"{response.headers['Vary']}, {value}"
                response.headers[name] = value
            return response

        return wrapped  # functools.wraps keeps the view's own csrf_exempt

    return decorate
