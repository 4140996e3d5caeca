"""``POST /v1/responses``, OpenAI's Responses API, with an assistant's key: the official SDK's
``client.responses.create(...)``, streamed or not, and ``previous_response_id`` follow-ups.

Like chat completions (assistants/openai_api.py): the key decides the assistant, the turn runs through the chat
pipeline as its owner (``assistants.services.assistant_turn_start``), usage, rate limits and the body limit are
the same. The wire format is assistants/responses_wire.py, the stored responses assistants/response_turns.py.
"""
from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from django.http import HttpRequest, HttpResponseBase, JsonResponse
from django.utils import translation
from django.views.decorators.csrf import csrf_exempt

from assistants.openai_http import authenticate, coded, final_event, method_not_allowed, openai_error, request_body, stream_failure
from assistants.response_turns import response_turn_start
from assistants.responses_wire import RESPONSE_PARAMS, ResponseEvents, ResponseReply, responses_request
from chat.errors import ChatError
from chat.services import in_thread, turn_stream
from core.errors import ApplicationError
from core.http.sse import event_stream_response


@csrf_exempt  # a bearer key, never a cookie
async def responses(request: HttpRequest) -> HttpResponseBase:
    """Answer the last user message of ``input`` as the key's assistant: one ``response`` object, or its events.

    Errors before the answer starts are OpenAI error objects with their status (401 key, 403 kind or assistant
    unavailable, 400 body, 404 model or previous response, 429 with Retry-After); a failure while streaming is an
    ``error`` event, then ``response.failed``; without streaming, a 502 (the LLM's) or 500 error object.
    """
    if request.method != "POST":
        return method_not_allowed("POST")
    try:
        key = await in_thread(authenticate)(request)
        asked = responses_request(request_body(request))
        turn = await in_thread(response_turn_start)(key, asked)
    except ApplicationError as exc:
        return openai_error(exc, RESPONSE_PARAMS)
    reply = ResponseReply.new(model=key.target_assistant.name, message_id=turn.message_id, asked=asked)
    if asked.stream:
        return event_stream_response(_frames(reply, turn_stream(turn), language=translation.get_language()))
    return await _response(reply, turn_stream(turn))


async def _response(reply: ResponseReply, events: AsyncGenerator[dict[str, Any], None]) -> JsonResponse:
    event, sources = await final_event(events)
    if event is None:
        return openai_error(coded(ChatError.INTERNAL_ERROR))  # a stream that ended without finishing: never expected
    if event["type"] == "error":
        return openai_error(stream_failure(event), RESPONSE_PARAMS)
    return JsonResponse(reply.completed(event, sources), json_dumps_params={"ensure_ascii": False})


async def _frames(reply: ResponseReply, events: AsyncGenerator[dict[str, Any], None], *,
                  language: str | None) -> AsyncGenerator[bytes, None]:
    """The turn's events as the Responses stream (``responses_wire.ResponseEvents``)."""
    # The events are produced while the response streams, after the middleware: in the request's language.
    with translation.override(language):
        writer = ResponseEvents(reply)
        async with aclosing(events):
            for frame in writer.opening():
                yield frame
            sources: list[dict[str, Any]] = []
            async for event in events:
                kind = event["type"]
                if kind == "sources":
                    sources = event["sources"]
                elif kind == "token":
                    yield writer.delta(event["text"])
                elif kind == "finish":
                    for frame in writer.closing(event, sources):
                        yield frame
                elif kind == "error":
                    for frame in writer.failure(stream_failure(event)):
                        yield frame
