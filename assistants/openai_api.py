"""The OpenAI-compatible API of assistants: ``POST /v1/chat/completions`` and ``GET /v1/models``, with an assistant's key.

The key decides the assistant (``model`` is echoed, never followed: a key reaches its own assistant only) and
the turn runs through the chat pipeline as the assistant's owner, re-checked at this request
(``assistants.services.assistant_turn_start``). The wire format is assistants/openai_wire.py; the citations
travel in its ``zhiku`` extension (docs/integrations.md). ``POST /v1/responses`` is assistants/openai_responses.py;
the key, body and error helpers both use are assistants/openai_http.py.
"""
from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.utils import translation
from django.views.decorators.csrf import csrf_exempt

from assistants.models import ApiKey, Assistant
from assistants.openai_http import MAX_BODY_BYTES as MAX_BODY_BYTES  # config/body_limits.py reads it here
from assistants.openai_http import authenticate, coded, final_event, method_not_allowed, openai_error, request_body, stream_failure
from assistants.openai_wire import ChatRequest, Reply, chat_request, error_body, extension, sse, usage_block
from assistants.services import assistant_turn_start
from chat.errors import ChatError
from chat.models import Channel
from chat.services import Turn, in_thread, turn_stream
from core.errors import ApplicationError, CoreError
from core.http.sse import event_stream_response


def _start(key: ApiKey, asked: ChatRequest) -> Turn:
    return assistant_turn_start(assistant=key.target_assistant, question=asked.question, channel=Channel.API,
                                history=asked.history, max_tokens=asked.max_tokens)


@csrf_exempt  # a bearer key, never a cookie
async def chat_completions(request: HttpRequest) -> HttpResponseBase:
    """Answer the last user message as the key's assistant, streamed as chunks or as one ``chat.completion``.

    Errors before the answer starts are OpenAI error objects with their status (401 key, 403 kind or
    assistant unavailable, 400 body, 429 with Retry-After); a failure while streaming is a ``data:`` error
    object, then ``[DONE]``.
    """
    if request.method != "POST":
        return method_not_allowed("POST")
    try:
        key = await in_thread(authenticate)(request)
        asked = chat_request(request_body(request))
        turn = await in_thread(_start)(key, asked)
    except ApplicationError as exc:
        return openai_error(exc)
    reply = Reply.new(model=key.target_assistant.name, message_id=turn.message_id)
    if asked.stream:
        frames = _frames(reply, turn_stream(turn), include_usage=asked.include_usage, language=translation.get_language())
        return event_stream_response(frames)
    return await _completion(reply, turn_stream(turn))


async def _completion(reply: Reply, events: AsyncGenerator[dict[str, Any], None]) -> JsonResponse:
    event, sources = await final_event(events)
    if event is None:
        return openai_error(coded(ChatError.INTERNAL_ERROR))  # a stream that ended without finishing: never expected
    if event["type"] == "error":
        return openai_error(stream_failure(event))
    return JsonResponse(reply.completion(event["answer"], event, sources), json_dumps_params={"ensure_ascii": False})


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
                    yield sse(error_body(stream_failure(event)))
            yield sse("[DONE]")


def _model(assistant: Assistant) -> dict[str, Any]:
    return {"id": assistant.name, "object": "model", "created": int(assistant.created_at.timestamp()),
            "owned_by": "zhiku", "zhiku": {"assistant_id": assistant.pk, "description": assistant.description}}


def _models(request: HttpRequest, model_id: str | None) -> dict[str, Any]:
    assistant = authenticate(request).target_assistant
    if model_id is None:
        return {"object": "list", "data": [_model(assistant)]}
    if model_id not in (assistant.name, str(assistant.pk)):
        raise coded(CoreError.NOT_FOUND)
    return _model(assistant)


async def models(request: HttpRequest, model_id: str | None = None) -> HttpResponse:
    """``GET /v1/models``: the key's assistant as the one model (``/v1/models/<name or id>``: that model)."""
    if request.method != "GET":
        return method_not_allowed("GET")
    try:
        return JsonResponse(await in_thread(_models)(request, model_id), json_dumps_params={"ensure_ascii": False})
    except ApplicationError as exc:
        return openai_error(exc)


@csrf_exempt  # a JSON 404 for any method, never a CSRF page
async def not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Any other path under /v1/: OpenAI's 404 error object, not the site's page."""
    return openai_error(coded(CoreError.NOT_FOUND))

