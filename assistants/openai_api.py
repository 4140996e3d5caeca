"""The OpenAI-compatible API of assistants: ``POST /v1/chat/completions`` and ``GET /v1/models``, with an assistant's key.

The key decides the assistant (``model`` is echoed, never followed: a key reaches its own assistant only) and
the turn runs through the chat pipeline as the assistant's owner, re-checked at this request
(``assistants.services.assistant_turn_start``). The wire format is assistants/openai_wire.py; the citations
travel in its ``zhiku`` extension (docs/integrations.md).
"""
from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.utils import translation
from django.views.decorators.csrf import csrf_exempt

from assistants.keys import bearer_key, key_authenticate
from assistants.models import ApiKey, Assistant, KeyKind
from assistants.openai_wire import ChatRequest, Reply, chat_request, error_body, extension, sse, usage_block
from assistants.services import assistant_turn_start
from chat.models import Channel
from chat.services import Turn, in_thread, turn_stream
from core.errors import CODES, ApplicationError, message
from core.http.body import body_over_limit, json_body
from core.http.sse import event_stream_response

MAX_BODY_BYTES = 256 * 1024
"""A long history of pasted messages fits; only the last few turns are read (``services.HISTORY_TURNS``)."""
LLM_CODES = ("llm_timeout", "llm_failed")


def coded(code: str, variant: str | None = None, **params: Any) -> ApplicationError:
    """An ApplicationError for a registered code answered outside the error classes (its status from ``CODES``)."""
    exc = ApplicationError(message(code, variant, **params), code=code)
    exc.status_code = CODES[code].http_status or 400
    return exc


def openai_error(exc: ApplicationError) -> JsonResponse:
    response = JsonResponse(error_body(exc), status=exc.status_code, json_dumps_params={"ensure_ascii": False})
    if "retry_after" in exc.extra:
        response["Retry-After"] = str(exc.extra["retry_after"])
    if exc.status_code == 401:
        response["WWW-Authenticate"] = 'Bearer realm="zhiku"'
    return response


def _stream_failure(event: dict[str, Any]) -> ApplicationError:
    """The ``error`` event of a turn that failed after it started, as an error of its own (502 for the LLM's)."""
    exc = ApplicationError(event.get("message") or message("internal_error"), code=event.get("code") or "internal_error")
    exc.status_code = 502 if exc.code in LLM_CODES else 500
    return exc


def _authenticate(request: HttpRequest) -> ApiKey:
    return key_authenticate(bearer_key(request.headers.get("Authorization", "")), kind=KeyKind.ASSISTANT)


def _body(request: HttpRequest) -> Any:
    if body_over_limit(request, MAX_BODY_BYTES) is not None:
        raise coded("body_too_large", "stream", limit=MAX_BODY_BYTES)
    return json_body(request, MAX_BODY_BYTES)


def _start(key: ApiKey, asked: ChatRequest) -> Turn:
    return assistant_turn_start(assistant=key.target_assistant, question=asked.question, channel=Channel.API,
                                history=asked.history)


def _method_not_allowed(allowed: str) -> JsonResponse:
    response = openai_error(coded("method_not_allowed"))
    response["Allow"] = allowed
    return response


@csrf_exempt  # a bearer key, never a cookie
async def chat_completions(request: HttpRequest) -> HttpResponseBase:
    """Answer the last user message as the key's assistant, streamed as chunks or as one ``chat.completion``.

    Errors before the answer starts are OpenAI error objects with their status (401 key, 403 kind or
    assistant unavailable, 400 body, 429 with Retry-After); a failure while streaming is a ``data:`` error
    object, then ``[DONE]``.
    """
    if request.method != "POST":
        return _method_not_allowed("POST")
    try:
        key = await in_thread(_authenticate)(request)
        asked = chat_request(_body(request))
        turn = await in_thread(_start)(key, asked)
    except ApplicationError as exc:
        return openai_error(exc)
    reply = Reply.new(model=key.target_assistant.name, message_id=turn.message_id)
    if asked.stream:
        frames = _frames(reply, turn_stream(turn), include_usage=asked.include_usage, language=translation.get_language())
        return event_stream_response(frames)
    return await _completion(reply, turn_stream(turn))


async def _completion(reply: Reply, events: AsyncGenerator[dict[str, Any], None]) -> JsonResponse:
    sources: list[dict[str, Any]] = []
    async with aclosing(events):
        async for event in events:
            if event["type"] == "sources":
                sources = event["sources"]
            elif event["type"] == "error":
                return openai_error(_stream_failure(event))
            elif event["type"] == "finish":
                return JsonResponse(reply.completion(event["answer"], event, sources),
                                    json_dumps_params={"ensure_ascii": False})
    return openai_error(coded("internal_error"))  # a stream that ended without finishing: never expected


async def _frames(reply: Reply, events: AsyncGenerator[dict[str, Any], None], *, include_usage: bool,
                  language: str | None) -> AsyncGenerator[bytes, None]:
    """The turn's events as OpenAI chunks: the role first, a chunk per token, ``stop`` with ``zhiku``, ``[DONE]``."""
    # The events are produced while the response streams, after the middleware: in the request's language.
    with translation.override(language):
        async with aclosing(events):
            yield sse(reply.chunk({"role": "assistant", "content": ""}))
            sources: list[dict[str, Any]] = []
            async for event in events:
                kind = event["type"]
                if kind == "sources":
                    sources = event["sources"]
                elif kind == "token":
                    yield sse(reply.chunk({"content": event["text"]}))
                elif kind == "finish":
                    yield sse(reply.chunk({"zhiku": extension(event, sources)}, "stop"))
                    if include_usage:
                        yield sse(reply.usage_chunk(usage_block(event)))
                elif kind == "error":
                    yield sse(error_body(_stream_failure(event)))
            yield sse("[DONE]")


def _model(assistant: Assistant) -> dict[str, Any]:
    return {"id": assistant.name, "object": "model", "created": int(assistant.created_at.timestamp()),
            "owned_by": "zhiku", "zhiku": {"assistant_id": assistant.pk, "description": assistant.description}}


def _models(request: HttpRequest, model_id: str | None) -> dict[str, Any]:
    assistant = _authenticate(request).target_assistant
    if model_id is None:
        return {"object": "list", "data": [_model(assistant)]}
    if model_id not in (assistant.name, str(assistant.pk)):
        raise coded("not_found")
    return _model(assistant)


async def models(request: HttpRequest, model_id: str | None = None) -> HttpResponse:
    """``GET /v1/models``: the key's assistant as the one model (``/v1/models/<name or id>``: that model)."""
    if request.method != "GET":
        return _method_not_allowed("GET")
    try:
        return JsonResponse(await in_thread(_models)(request, model_id), json_dumps_params={"ensure_ascii": False})
    except ApplicationError as exc:
        return openai_error(exc)


@csrf_exempt  # a JSON 404 for any method, never a CSRF page
async def not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Any other path under /v1/: OpenAI's 404 error object, not the site's page."""
    return openai_error(coded("not_found"))

