"""The chat websocket: parse, authorise, stream the service's events — nothing else (protocol: docs/chat.md)."""
from __future__ import annotations

import asyncio
import logging
from contextlib import aclosing
from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.utils import translation

from chat.errors import ChatError
from chat.services import turn_abandon, turn_prepare, turn_stream
from core import safejson
from core.errors import ApplicationError, CoreError, message
from core.http.i18n import language_from_scope
from knowledge.errors import KnowledgeError

logger = logging.getLogger(__name__)

# An ask message is small (a question of at most MAX_QUERY_CHARS); a larger one is refused with
# too_large and the socket stays usable. Messages over ZHIKU_WS_MAX_MESSAGE_BYTES never get here:
# daphne refuses them itself (config/ws_frames.py), with the same error event, then closes.
MAX_FRAME_BYTES = 64 * 1024
CLOSE_UNAUTHENTICATED = 4401
# How long a disconnect waits for the cancelled answer to be settled in the database.
SETTLE_WAIT_S = 5.0


class ChatConsumer(AsyncJsonWebsocketConsumer):
    """One question at a time per connection; ``cancel`` (or closing the socket) stops the answer."""

    # The chat talks only to its own client, so it joins no channel layer: with one, a Redis
    # outage broke the layer's receive loop and closed every chat socket with 1011.
    channel_layer_alias = None
    task: asyncio.Task | None = None
    message_id: int | None = None
    stopping: str = ""

    async def __call__(self, scope, receive, send):
        # Error events in the handshake's language: the language switch's cookie, else Accept-Language, else zh-hans.
        with translation.override(language_from_scope(scope)):
            return await super().__call__(scope, receive, send)

    async def connect(self) -> None:
        user = self.scope.get("user")
        await self.accept()
        if user is None or not user.is_authenticated:
            await self.send_error("not_authenticated", message(CoreError.NOT_AUTHENTICATED, "socket"))
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        self.user = user

    async def disconnect(self, code: int) -> None:
        if self.task is not None and not self.task.done():
            self.stopping = "disconnect"
            self.task.cancel()
            await asyncio.wait([self.task], timeout=SETTLE_WAIT_S)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        if text_data is None:
            await self.send_error("invalid_message", message(ChatError.INVALID_MESSAGE))
            return
        if len(text_data) > MAX_FRAME_BYTES // 4 and len(text_data.encode("utf-8", "surrogatepass")) > MAX_FRAME_BYTES:
            await self.send_json({"type": "error", "code": "too_large", "limit": MAX_FRAME_BYTES,
                                  "message": message(ChatError.TOO_LARGE, limit=MAX_FRAME_BYTES)})
            return
        try:
            # Depth, size and character checks (core/safejson.py): a bad frame is an error event, never a 1011.
            content = safejson.loads(text_data)
        except ApplicationError as exc:
            await self.send_error(exc.code, exc.message)
            return
        await self.receive_json(content)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if not hasattr(self, "user"):
            return
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == "ask":
            await self.ask(content)
        elif kind == "cancel":
            await self.cancel()
        else:
            await self.send_error("unknown_type", message(ChatError.UNKNOWN_TYPE))

    async def ask(self, content: dict[str, Any]) -> None:
        if self.task is not None and not self.task.done():
            await self.send_error("busy", message(KnowledgeError.BUSY, "streaming"))
            return
        self.stopping = ""
        self.message_id = None
        self.task = asyncio.create_task(self.answer(content))

    async def cancel(self) -> None:
        if self.task is None or self.task.done():
            await self.send_error("nothing_to_cancel", message(ChatError.NOTHING_TO_CANCEL))
            return
        self.stopping = "cancel"
        self.task.cancel()

    async def answer(self, content: dict[str, Any]) -> None:
        """Run one turn, sending each event as it comes; a cancel ends it with an ``error`` ``cancelled``."""
        try:
            prepare = asyncio.ensure_future(turn_prepare(
                user=self.user, conversation_id=content.get("conversation"), kb_ids=content.get("kb_ids"),
                question=content.get("question"),
            ))
            try:
                turn = await asyncio.shield(prepare)
            except ApplicationError as exc:
                await self.send_error(exc.code, exc.message)
                return
            except asyncio.CancelledError:
                # The question's rows are written in their thread whatever happens; mark its answer cancelled.
                try:
                    turn = await prepare
                except ApplicationError:
                    raise asyncio.CancelledError from None
                self.message_id = turn.message_id
                await turn_abandon(turn)
                raise
            self.message_id = turn.message_id
            events = turn_stream(turn)
            async with aclosing(events):
                async for event in events:
                    await self.send_json(event)
        except asyncio.CancelledError:
            if self.stopping == "cancel":
                await self.send_json({"type": "error", "code": "cancelled", "message": message(KnowledgeError.CANCELLED, "answer"),
                                      "message_id": self.message_id, "status": "cancelled"})
            else:
                raise
        except Exception:  # noqa: BLE001 - the socket stays usable; the service already settled the message
            logger.exception("chat consumer failed")
            await self.send_error("internal_error", message(ChatError.INTERNAL_ERROR))

    async def send_error(self, code: str, text: str) -> None:
        await self.send_json({"type": "error", "code": code, "message": str(text)})
