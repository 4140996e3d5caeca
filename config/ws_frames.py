"""The websocket message limit of daphne's connections: an error event, then close code 1009.

daphne hands autobahn a message limit (1 MiB unless ``--websocket-max-message-size`` says
otherwise); autobahn checks each frame's declared length as its header arrives, before a byte of
the payload is kept, and a message over the limit fails the connection: it drops the TCP
connection, and a client sees its socket end with no reason in the protocol it speaks.

``FrameLimitProtocol`` keeps that check (so an oversized message still costs no memory: its payload
is read and dropped) and adds what the chat protocol promises for every refusal, an ``error``
event, ``{"type": "error", "code": "too_large", "message": ..., "limit": ...}``, in the
handshake's language, sent just before the close. The limit is ``ZHIKU_WS_MAX_MESSAGE_BYTES``
(frames and whole messages alike; docs/production.md). ``install()`` makes daphne's websocket
factory build this protocol; config/asgi.py calls it, and daphne imports the application before
it builds its factory.
"""
from __future__ import annotations

import json

from daphne.ws_protocol import WebSocketFactory, WebSocketProtocol
from django.conf import settings
from django.utils import translation

from config.i18n import language_from_scope
from knowledge.errors import message


def too_large_event(limit: int) -> dict:
    return {"type": "error", "code": "too_large", "limit": limit,
            "message": message("too_large", "closing", limit=limit)}


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
