"""What the OpenAI-compatible views share (assistants/openai_api.py for chat completions and models,
assistants/openai_responses.py for responses): the key, the body, and errors in OpenAI's shape.

The key decides the assistant (``model`` never switches to another one); errors are OpenAI error objects with
their status (401 key, 403 kind or assistant unavailable, 400 body, 404, 413, 429 with Retry-After).
"""
from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from django.http import HttpRequest, JsonResponse

from assistants.keys import bearer_key, key_authenticate
from assistants.models import ApiKey, KeyKind
from assistants.openai_wire import ERROR_PARAMS, error_body
from chat.errors import ChatError
from core.errors import CODES, ApplicationError, CoreError, ErrorCode, message
from core.http.body import body_over_limit, json_body

MAX_BODY_BYTES = 256 * 1024
"""A long history of pasted messages fits; only the last few turns are read (``services.HISTORY_TURNS``)."""
LLM_CODES = ("llm_timeout", "llm_failed")


def coded(code: ErrorCode, variant: str | None = None, **params: Any) -> ApplicationError:
    """An ApplicationError for a registered code answered outside the error classes (its status from ``CODES``)."""
    exc = ApplicationError(message(code, variant, **params), code=str(code))
    exc.status_code = CODES[code].http_status or 400
    return exc


def openai_error(exc: ApplicationError, params: dict[str, str] = ERROR_PARAMS) -> JsonResponse:
    """``exc`` as OpenAI's error object and status (``params``: the request field each code is about)."""
    response = JsonResponse(error_body(exc, params), status=exc.status_code, json_dumps_params={"ensure_ascii": False})
    if "retry_after" in exc.extra:
        response["Retry-After"] = str(exc.extra["retry_after"])
    if exc.status_code == 401:
        response["WWW-Authenticate"] = 'Bearer realm="zhiku"'
    return response


def stream_failure(event: dict[str, Any]) -> ApplicationError:
    """The ``error`` event of a turn that failed after it started, as an error of its own (502 for the LLM's)."""
    exc = ApplicationError(event.get("message") or message(ChatError.INTERNAL_ERROR), code=event.get("code") or "internal_error")
    exc.status_code = 502 if exc.code in LLM_CODES else 500
    return exc


def authenticate(request: HttpRequest) -> ApiKey:
    """The request's live assistant key (``Authorization: Bearer``), within its rate limit; reads the database."""
    return key_authenticate(bearer_key(request.headers.get("Authorization", "")), kind=KeyKind.ASSISTANT)


def request_body(request: HttpRequest) -> Any:
    """The JSON body within ``MAX_BODY_BYTES`` (413 ``body_too_large`` over it, before reading it)."""
    if body_over_limit(request, MAX_BODY_BYTES) is not None:
        raise coded(CoreError.BODY_TOO_LARGE, "stream", limit=MAX_BODY_BYTES)
    return json_body(request, MAX_BODY_BYTES)


def method_not_allowed(allowed: str) -> JsonResponse:
    response = openai_error(coded(CoreError.METHOD_NOT_ALLOWED))
    response["Allow"] = allowed
    return response


async def final_event(events: AsyncGenerator[dict[str, Any], None]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """A turn's stream read to its end, for the answers that are not streamed: its ``finish`` or ``error`` event
    (None when it ended without either: never expected) and the sources it announced."""
    sources: list[dict[str, Any]] = []
    async with aclosing(events):
        async for event in events:
            if event["type"] == "sources":
                sources = event["sources"]
            elif event["type"] in ("error", "finish"):
                return event, sources
    return None, sources
