"""Tell a synchronous view that its HTTP client has gone away.

Django's ASGI handler listens for ``http.disconnect`` while a view runs and then cancels the view's
task; but a synchronous view runs in a worker thread, which a cancellation does not reach, so it
would carry on (a chunking preview would keep its parse running for nobody). This ASGI wrapper sets a
``threading.Event`` in the scope when the disconnect arrives; ``client_gone(request)`` reads it.
"""
from __future__ import annotations

import threading
from collections.abc import Callable

SCOPE_KEY = "zhiku.disconnected"


class DisconnectWatch:
    """ASGI middleware: ``scope[SCOPE_KEY]`` is an Event set once the HTTP client disconnects."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        gone = threading.Event()

        async def watched_receive():
            message = await receive()
            if message.get("type") == "http.disconnect":
                gone.set()
            return message

        await self.app({**scope, SCOPE_KEY: gone}, watched_receive, send)


def client_gone(request) -> Callable[[], bool]:
    """A callable telling whether ``request``'s client has disconnected (always False outside ASGI)."""
    scope = getattr(request, "scope", None) or {}
    gone = scope.get(SCOPE_KEY)
    if gone is None:
        return lambda: False
    return gone.is_set
