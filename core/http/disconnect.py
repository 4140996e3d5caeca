"""Tell a synchronous view that its HTTP client has gone away.

Django's ASGI handler listens for ``http.disconnect`` while a view runs and then cancels the view's
task; but a synchronous view runs in a worker thread, which a cancellation does not reach, so it
would carry on (a chunking preview would keep its parse running for nobody). This ASGI wrapper sets a
``threading.Event`` in the scope when the disconnect arrives; ``client_gone(request)`` reads it.
"""
from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

SCOPE_KEY = "zhiku.disconnected"

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[Mapping[str, Any]]]
Send = Callable[[Mapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class DisconnectWatch:
    """ASGI middleware: ``scope[SCOPE_KEY]`` is an Event set once the HTTP client disconnects."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        gone = threading.Event()

        async def watched_receive() -> Mapping[str, Any]:
            message = await receive()
            if message.get("type") == "http.disconnect":
                gone.set()
            return message

        await self.app({**scope, SCOPE_KEY: gone}, watched_receive, send)


def client_gone(request: object) -> Callable[[], bool]:
    """A callable telling whether ``request``'s client has disconnected (always False outside ASGI)."""
    scope = getattr(request, "scope", None) or {}
    gone: threading.Event | None = scope.get(SCOPE_KEY)
    if gone is None:
        return lambda: False
    return gone.is_set
