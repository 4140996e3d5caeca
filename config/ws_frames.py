"""The websocket message limit of daphne's connections: an error event, then close code 1009.

autobahn checks each frame's declared length as its header arrives, here against ``ZHIKU_WS_MAX_MESSAGE_BYTES``
(frames and whole messages alike, docs/production.md), and its own answer to a message over it drops the TCP
connection with no reason a client can read. ``FrameLimitProtocol`` keeps the check (the payload is read and
dropped) and first sends the chat protocol's ``{"type": "error", "code": "too_large", "message", "limit"}`` event
in the handshake's language, then closes with 1009. ``install()`` (config/asgi.py calls it before daphne builds
its factory) makes daphne's websocket factory build this protocol.
"""
from __future__ import annotations

import json

from daphne.ws_protocol import WebSocketFactory, WebSocketProtocol
from django.conf import settings
from django.utils import translation

from chat.errors import ChatError
from core.errors import message
from core.http.i18n import language_from_scope


def too_large_event(limit: int) -> dict:
    return {"type": "error", "code": "too_large", "limit": limit,
            "message": message(ChatError.TOO_LARGE, "closing", limit=limit)}


class FrameLimitProtocol(WebSocketProtocol):
    """daphne's websocket protocol with ``ZHIKU_WS_MAX_MESSAGE_BYTES`` and an error event before the 1009 close."""

    def onConnect(self, request):
        limit = settings.ZHIKU_WS_MAX_MESSAGE_BYTES
        self.maxMessagePayloadSize = self.maxFramePayloadSize = limit
        return super().onConnect(request)

    def _max_message_size_exceeded(self, msg_size, max_msg_size, reason) -> None:
        # autobahn's hook for a message over the limit; its own version fails the connection (1009).
        if self.state == self.STATE_OPEN and not self.muted:
            with translation.override(language_from_scope({"headers": getattr(self, "clean_headers", [])})):
                event = too_large_event(self.maxMessagePayloadSize)
            self.sendMessage(json.dumps(event, ensure_ascii=False).encode(), isBinary=False)
        # A closing handshake with 1009 rather than autobahn's default for a failure, dropping the TCP
        # connection at once (the event would be lost with it). The rest of the message is still read
        # and dropped; after the close handshake timeout the connection is dropped all the same.
        self.failByDrop = False
        super()._max_message_size_exceeded(msg_size, max_msg_size, reason)


def install() -> None:
    """daphne's websocket connections use ``FrameLimitProtocol`` from now on."""
    WebSocketFactory.protocol = FrameLimitProtocol
