"""Trying an assistant from its console page: ``POST /api/assistants/<id>/chat/stream/``, the chat's SSE events.

The owner asks as the assistant would answer anyone (its KBs as the owner may read them now, its prompt,
model and lines: ``assistants.services.assistant_turn_start``), on the ``try`` channel, so the preview
counts in the assistant's usage but not in the owner's own conversations. Authentication and the event
frames are the chat stream's (chat/sse.py); another user's assistant is a 404.
"""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.utils import translation
from django.views.decorators.csrf import csrf_exempt

from assistants.services import assistant_get_for_user, assistant_turn_start
from chat.models import Channel
from chat.services import in_thread, turn_stream
from chat.sse import MAX_BODY_BYTES, authenticate, error_answer, error_response, sse_frames
from knowledge import safejson
from knowledge.errors import ApplicationError

ASK_FIELDS = {"question", "conversation"}


def _start(*, user, assistant_id: int, body: dict):
    assistant = assistant_get_for_user(user=user, assistant_id=assistant_id)
    return assistant_turn_start(assistant=assistant, question=body.get("question"), channel=Channel.TRY,
                                conversation_id=body.get("conversation"))


@csrf_exempt  # checked in chat.sse.authenticate for session users; token clients need none
async def assistant_stream(request: HttpRequest, assistant_id: int) -> HttpResponse:
    """Ask the caller's own assistant ``{"question", "conversation"?}``; the answer streams as ``text/event-stream``.

    Errors before streaming (authentication, input, an assistant that is not the caller's or that can
    read no KB now) are JSON error responses with their status; later ones arrive as an ``error`` event.
    """
    if request.method != "POST":
        response = error_response("method_not_allowed")
        response["Allow"] = "POST"
        return response
    user, failure = await authenticate(request)
    if failure is not None:
        return failure
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return error_response("body_too_large", "stream", limit=MAX_BODY_BYTES)
    try:
        body = safejson.loads(request.body or b"null", limit_bytes=MAX_BODY_BYTES)
        if not isinstance(body, dict) or not set(body) <= ASK_FIELDS:
            return error_response("invalid_try_body")
        turn = await in_thread(_start)(user=user, assistant_id=assistant_id, body=body)
    except ApplicationError as exc:
        return error_answer(exc.code, exc.message, exc.status_code)
    response = StreamingHttpResponse(sse_frames(turn_stream(turn), translation.get_language()),
                                     content_type="text/event-stream; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: pass events through as they come
    return response
