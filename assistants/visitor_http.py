"""The HTTP answers a share link (assistants/share.py) and an embedded chat (assistants/embed.py) share.

Once a view has found the assistant, checked who may use it and named the visitor (assistants/visitors.py),
these build the same answers for both: the turn's events as Server-Sent Events in chat/sse.py's framing, the
visitor's own conversations, a thumb on one of their answers, and the chat page. Errors are the API's shape,
``{"error": {"code", "message"}}`` with the code's status (core/errors.py).
"""
from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from django.http import HttpRequest, HttpResponseBase, JsonResponse
from django.utils import translation
from django.utils.translation import gettext

from assistants.models import Assistant
from assistants.services import assistant_turn_start
from assistants.visitors import public_event, visitor_conversation, visitor_conversations, visitor_feedback, visitor_throttle
from chat.errors import ChatError
from chat.services import Turn, in_thread, turn_stream
from chat.sse import MAX_BODY_BYTES, sse_frames
from core.errors import CODES, ApplicationError, CoreError, ErrorCode, fail, message
from core.http.body import body_over_limit, json_body
from core.http.security import client_address
from core.http.sse import event_stream_response


def error_response(code: ErrorCode, variant: str | None = None, **params: Any) -> JsonResponse:
    return JsonResponse({"error": {"code": str(code), "message": message(code, variant, **params)}},
                        status=CODES[code].http_status)


def exception_response(exc: ApplicationError) -> JsonResponse:
    response = JsonResponse({"error": {"code": exc.code, "message": exc.message}}, status=exc.status_code)
    retry = (getattr(exc, "extra", None) or {}).get("retry_after")
    if retry:
        response["Retry-After"] = str(retry)
    return response


async def _public(events: AsyncGenerator[dict[str, Any], None]) -> AsyncGenerator[dict[str, Any], None]:
    async with aclosing(events):
        async for event in events:
            shown = public_event(event)
            if shown is not None:
                yield shown


def _start(*, assistant: Assistant, channel: str, visitor: str, body: dict[str, Any]) -> Turn:
    conversation = body.get("conversation")
    if conversation is not None and (not isinstance(conversation, int) or isinstance(conversation, bool)):
        raise fail(ChatError.INVALID_CONVERSATION)
    return assistant_turn_start(assistant=assistant, question=body.get("question"), channel=channel, visitor=visitor,
                                conversation_id=conversation)


async def stream_response(request: HttpRequest, *, assistant: Assistant, channel: str, visitor: str) -> HttpResponseBase:
    """Throttle, read ``{"question", "conversation"?}``, start the assistant's turn and stream what the visitor sees.

    Errors before streaming (throttling, input, a conversation not the visitor's, an assistant whose owner lost
    its KBs) are JSON error responses; later ones arrive as an ``error`` event.
    """
    if body_over_limit(request, MAX_BODY_BYTES) is not None:
        return error_response(CoreError.BODY_TOO_LARGE, "stream", limit=MAX_BODY_BYTES)
    try:
        await in_thread(visitor_throttle)(assistant_id=assistant.pk, visitor=visitor, address=client_address(request))
        body = json_body(request, MAX_BODY_BYTES)
        if not isinstance(body, dict):
            return error_response(CoreError.INVALID, "ask_body")
        turn = await in_thread(_start)(assistant=assistant, channel=channel, visitor=visitor, body=body)
    except ApplicationError as exc:
        return exception_response(exc)
    return event_stream_response(sse_frames(_public(turn_stream(turn)), translation.get_language()))


def conversations_response(*, assistant: Assistant, visitor: str, conversation_id: Any = None) -> JsonResponse:
    """The visitor's conversations, or one of them with its messages."""
    try:
        if conversation_id is None:
            return JsonResponse({"results": visitor_conversations(assistant=assistant, visitor=visitor)})
        return JsonResponse(visitor_conversation(assistant=assistant, visitor=visitor, conversation_id=conversation_id))
    except ApplicationError as exc:
        return exception_response(exc)


def feedback_response(request: HttpRequest, *, assistant: Assistant, visitor: str) -> JsonResponse:
    """``{"message", "rating": "up"|"down"}`` on one of the visitor's own answers."""
    try:
        body = json_body(request, 4096)
        if not isinstance(body, dict):
            return error_response(ChatError.INVALID_RATING)
        rating = visitor_feedback(assistant=assistant, visitor=visitor, message_id=body.get("message"),
                                  rating=body.get("rating"))
    except ApplicationError as exc:
        return exception_response(exc)
    return JsonResponse({"message": body.get("message"), "rating": rating})


def page_context(assistant: Assistant, *, base: str, ticket: str = "", embedded: bool = False) -> dict[str, Any]:
    """The chat page's template context: the assistant's public face and the page script's settings."""
    config = {
        "base": base, "ticket": ticket, "embedded": embedded, "opening": assistant.opening_message,
        "suggested": list(assistant.suggested_questions or []),
        "strings": {
            "send": gettext("Send"), "thinking": gettext("Searching the knowledge base…"),
            "sources": gettext("Sources"), "new": gettext("New chat"), "history": gettext("Earlier chats"),
            "failed": gettext("The answer could not be produced."), "busy": gettext("Too many questions; wait a moment."),
            "up": gettext("Helpful"), "down": gettext("Not helpful"), "notFound": gettext("Not found in the knowledge base"),
            "uncertain": gettext("May not fully answer the question"), "redacted": gettext("Source no longer visible"),
        },
    }
    return {"assistant_name": assistant.name, "description": assistant.description, "config": config,
            "embedded": embedded}
