"""The chat event stream over HTTP (Server-Sent Events) for clients without websockets: ``POST /api/chat/stream/``."""
from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any, cast

from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.utils import translation
from django.views.decorators.csrf import csrf_exempt

from chat.auth import user_for_token
from chat.services import turn_prepare, turn_stream
from core.errors import CODES, ApplicationError, CoreError, ErrorCode, message
from core.http.body import body_over_limit, json_body
from core.http.csrf import csrf_reason
from core.http.sse import event_stream_response

MAX_BODY_BYTES = 64 * 1024


def sse_encode(event: dict[str, Any]) -> bytes:
    """One SSE frame: ``event: <type>`` and the JSON on one ``data:`` line."""
    return f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n".encode()


async def sse_frames(events: AsyncGenerator[dict[str, Any], None], language: str | None = None) -> AsyncGenerator[bytes, None]:
    # The events are produced while the response streams, after the middleware: in the request's language.
    with translation.override(language):
        async with aclosing(events):
            async for event in events:
                yield sse_encode(event)


def error_answer(code: str, text: str, status: int) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": text}}, status=status)


def error_response(code: ErrorCode, variant: str | None = None, **params: Any) -> JsonResponse:
    """The registered code's answer (core.errors.CODES): its status and message."""
    return error_answer(str(code), message(code, variant, **params), CODES[code].http_status or 400)


class _CSRFCheck(CsrfViewMiddleware):
    def _reject(self, request, reason):
        return reason


def _no_view(request: HttpRequest) -> HttpResponseBase:
    return HttpResponse()


def csrf_failure_reason(request: HttpRequest) -> str | None:
    """The CSRF failure reason for a session-authenticated request, or None (as DRF's SessionAuthentication)."""
    check = _CSRFCheck(_no_view)
    check.process_request(request)
    # _reject above answers the reason itself, not a 403 page.
    return cast("str | None", check.process_view(request, _no_view, (), {}))


async def authenticate(request: HttpRequest):
    """(user, error response): ``Authorization: Token <key>`` first, else the session with its CSRF check."""
    header = request.headers.get("Authorization", "")
    if header:
        scheme, _, key = header.partition(" ")
        if scheme.lower() != "token" or not key.strip():
            return None, error_response(CoreError.NOT_AUTHENTICATED, "sse_token")
        user = await user_for_token(key.strip()[:100])
        if not user.is_authenticated:
            return None, error_response(CoreError.AUTHENTICATION_FAILED)
        return user, None
    user = await request.auser()
    if not user.is_authenticated:
        return None, error_response(CoreError.NOT_AUTHENTICATED, "sse")
    reason = csrf_failure_reason(request)
    if reason:
        return None, error_response(CoreError.PERMISSION_DENIED, "csrf", reason=csrf_reason(reason))
    return user, None


@csrf_exempt  # checked in authenticate for session users; token clients need none
async def chat_stream(request: HttpRequest) -> HttpResponseBase:
    """Ask a question and receive the websocket protocol's events as ``text/event-stream``.

    The body is the websocket's ``ask`` message (``type`` may be left out).
    Errors found before streaming (authentication, input, a conversation or KB
    the caller cannot read) are ordinary JSON error responses with their status;
    later ones arrive as an ``error`` event.
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
        # The REST API's checks (core/safejson.py): 413 body_too_large, 400 invalid_json / json_too_deep /
        # invalid_characters.
        body = json_body(request, MAX_BODY_BYTES)
    except ApplicationError as exc:
        return error_answer(exc.code, exc.message, exc.status_code)
    if not isinstance(body, dict) or body.get("type", "ask") != "ask":
        return error_response(CoreError.INVALID, "ask_body")
    try:
        turn = await turn_prepare(user=user, conversation_id=body.get("conversation"), kb_ids=body.get("kb_ids"),
                                  question=body.get("question"))
    except ApplicationError as exc:
        return error_answer(exc.code, exc.message, exc.status_code)
    return event_stream_response(sse_frames(turn_stream(turn), translation.get_language()))
