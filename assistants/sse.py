"""Trying an assistant from its console page: ``POST /api/assistants/<id>/chat/stream/``, the chat's SSE events.

The owner asks as the assistant would answer anyone (its KBs as the owner may read them now, its prompt,
model and lines: ``assistants.services.assistant_turn_start``), on the ``try`` channel, so the preview
counts in the assistant's usage but not in the owner's own conversations. Authentication and the event
frames are the chat stream's (chat/sse.py); another user's assistant is a 404.
"""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponseBase
from django.utils import translation
from django.views.decorators.csrf import csrf_exempt

from assistants.errors import AssistantsError
from assistants.services import assistant_get_for_user, assistant_turn_start
from chat.models import Channel
from chat.services import Turn, in_thread, turn_stream
from chat.sse import MAX_BODY_BYTES, authenticate, error_answer, error_response, sse_frames
from core.errors import ApplicationError, CoreError
from core.http.body import body_over_limit, json_body
from core.http.sse import event_stream_response

ASK_FIELDS = {"question", "conversation"}


def _start(*, user: Any, assistant_id: int, body: dict[str, Any]) -> Turn:
    assistant = assistant_get_for_user(user=user, assistant_id=assistant_id)
    return assistant_turn_start(assistant=assistant, question=body.get("question"), channel=Channel.TRY,
                                conversation_id=body.get("conversation"))


@csrf_exempt  # checked in chat.sse.authenticate for session users; token clients need none
async def assistant_stream(request: HttpRequest, assistant_id: int) -> HttpResponseBase:
    """Ask the caller's own assistant ``{"question", "conversation"?}``; the answer streams as ``text/event-stream``.

    Errors before streaming (authentication, input, an assistant that is not the caller's or that can
    read no KB now) are JSON error responses with their status; later ones arrive as an ``error`` event.
    """
    if request.method != "POST":
        response = error_response(CoreError.METHOD_NOT_ALLOWED)
        response["Allow"] = "POST"
        return response
    user, failure = await authenticate(request)
    if failure is not None:
        return failure
    if body_over_limit(request, MAX_BODY_BYTES) is not None:
        return error_response(CoreError.BODY_TOO_LARGE, "stream", limit=MAX_BODY_BYTES)
    try:
        body = json_body(request, MAX_BODY_BYTES)
        if not isinstance(body, dict) or not set(body) <= ASK_FIELDS:
            return error_response(AssistantsError.INVALID_TRY_BODY)
        turn = await in_thread(_start)(user=user, assistant_id=assistant_id, body=body)
    except ApplicationError as exc:
        return error_answer(exc.code, exc.message, exc.status_code)
    return event_stream_response(sse_frames(turn_stream(turn), translation.get_language()))
