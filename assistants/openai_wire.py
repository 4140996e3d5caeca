"""OpenAI's chat-completions wire format: the request read into a question and its history, the chat pipeline's
events written back as ``chat.completion`` / ``chat.completion.chunk`` objects, errors in OpenAI's shape.

Plain functions over dicts, no Django views: assistants/openai_api.py does the HTTP. The ``zhiku`` field is
the documented extension (docs/integrations.md, "OpenAI-compatible API"): the verdict, the citations with
their relevance, and the conversation and message the turn was recorded as.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from assistants.errors import AssistantsError
from core.errors import ApplicationError, ErrorCode, fail

MAX_MESSAGES = 200
MAX_OUTPUT_TOKENS = 131072
"""The largest ``max_tokens`` / ``max_completion_tokens`` / ``max_output_tokens`` taken; the endpoint's model may allow fewer."""
ROLES = ("system", "developer", "user", "assistant", "tool", "function")

# OpenAI's error ``type`` by HTTP status (its SDK raises by status; the type names the kind for other clients).
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 405: "invalid_request_error", 409: "invalid_request_error",
               413: "invalid_request_error", 429: "rate_limit_error"}
# The request field a code is about, for the error's ``param``.
ERROR_PARAMS = {"empty_question": "messages", "question_too_long": "messages"}


@dataclass(frozen=True)
class ChatRequest:
    """What a chat-completions body asks: the question, the (role, content) pairs before it, how to answer."""

    question: str
    history: list[tuple[str, str]]
    stream: bool = False
    include_usage: bool = False
    model: str = ""
    max_tokens: int | None = None
    """The cap on the tokens the LLM writes (None: the site's, ``chat.llm.LLMConfig.max_tokens``)."""


def _text(content: Any) -> str | None:
    """A message's text: a string, or the text parts of a content list (images and audio are not read)."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        texts = [p for p in parts if isinstance(p, str)]
        if len(texts) == len(parts):
            return "\n".join(texts)
    return None


def _messages(value: Any) -> list[tuple[str, str]]:
    if not isinstance(value, list) or not value or len(value) > MAX_MESSAGES:
        raise fail(AssistantsError.INVALID_CHAT_REQUEST, "messages", limit=MAX_MESSAGES, extra={"param": "messages"})
    out = []
    for i, item in enumerate(value):
        text = _text(item.get("content")) if isinstance(item, dict) else None
        if not isinstance(item, dict) or item.get("role") not in ROLES or text is None:
            raise fail(AssistantsError.INVALID_CHAT_REQUEST, "item", extra={"param": f"messages[{i}]"})
        out.append((item["role"], text))
    return out


def token_cap(value: Any, code: ErrorCode, param: str) -> int | None:
    """A request's cap on the answer's tokens: None when absent, else a whole number from 1 to ``MAX_OUTPUT_TOKENS``
    (``code``'s ``max_tokens`` sentence, 400, naming ``param`` otherwise: a float, a string or true is refused)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_OUTPUT_TOKENS:
        raise fail(code, "max_tokens", param=param, limit=MAX_OUTPUT_TOKENS, extra={"param": param})
    return value


def chat_request(body: Any) -> ChatRequest:
    """The body read: the last user message is the question, the user and assistant messages before it its history.

    System, developer and tool messages are left out: the assistant's own system prompt applies, and a caller
    cannot replace it. 400 ``invalid_chat_request`` (with ``extra["param"]``) for a body OpenAI would refuse.
    """
    if not isinstance(body, dict):
        raise fail(AssistantsError.INVALID_CHAT_REQUEST, extra={"param": None})
    messages = _messages(body.get("messages"))
    stream, model, options = body.get("stream", False), body.get("model", ""), body.get("stream_options")
    if stream is not None and not isinstance(stream, bool):
        raise fail(AssistantsError.INVALID_CHAT_REQUEST, "stream", extra={"param": "stream"})
    if model is not None and not isinstance(model, str):
        raise fail(AssistantsError.INVALID_CHAT_REQUEST, "model", extra={"param": "model"})
    if options is not None and not isinstance(options, dict):
        raise fail(AssistantsError.INVALID_CHAT_REQUEST, "stream_options", extra={"param": "stream_options"})
    users = [i for i, (role, _) in enumerate(messages) if role == "user"]
    if not users:
        raise fail(AssistantsError.INVALID_CHAT_REQUEST, "no_user", extra={"param": "messages"})
    # max_completion_tokens succeeds max_tokens (OpenAI's chat-completions reference): given both, it wins.
    cap = token_cap(body.get("max_tokens"), AssistantsError.INVALID_CHAT_REQUEST, "max_tokens")
    completion_cap = token_cap(body.get("max_completion_tokens"), AssistantsError.INVALID_CHAT_REQUEST, "max_completion_tokens")
    last = users[-1]
    history = [(role, text) for role, text in messages[:last] if role in ("user", "assistant") and text.strip()]
    return ChatRequest(question=messages[last][1], history=history, stream=bool(stream),
                       include_usage=bool((options or {}).get("include_usage")), model=model or "",
                       max_tokens=completion_cap if completion_cap is not None else cap)


def error_body(exc: ApplicationError, params: dict[str, str] = ERROR_PARAMS) -> dict[str, Any]:
    """OpenAI's error object for ``exc``: ``message``, ``type``, ``param`` and our registered ``code``
    (``params``: the request field a code is about when the error does not name one)."""
    param = exc.extra.get("param", params.get(exc.code))
    kind = ERROR_TYPES.get(exc.status_code, "server_error" if exc.status_code >= 500 else "invalid_request_error")
    return {"error": {"message": exc.message, "type": kind, "param": param, "code": exc.code}}


# --- the answer, written back ------------------------------------------------------------------------------------

def citations_of(finish: dict[str, Any], sources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The answer's citations (``finish``) with their relevance (from the ``sources`` event), flat for a client."""
    relevance = {s["n"]: (s.get("scores") or {}).get("relevance") for s in sources}
    out = []
    for c in finish.get("citations") or []:
        document, pages = c.get("document") or {}, c.get("pages") or {}
        out.append({
            "n": c["n"], "chunk_id": c["chunk_id"], "kb_id": c["kb_id"], "document_id": document.get("id"),
            "document_title": document.get("title") or document.get("source_name") or "",
            "source_url": document.get("source_url") or "",
            "section": " › ".join(c.get("section_path") or []), "section_path": list(c.get("section_path") or []),
            "page": pages.get("start"), "pages": pages, "relevance": relevance.get(c["n"]),
        })
    return out


def extension(finish: dict[str, Any], sources: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``zhiku`` field: how the turn was answered and what it cites."""
    return {"verdict": finish.get("verdict"), "answered_by": finish.get("answered_by"),
            "relevance": finish.get("relevance"), "citations": citations_of(finish, sources),
            "conversation": finish.get("conversation"), "message": finish.get("message")}


def usage_block(finish: dict[str, Any] | None) -> dict[str, int]:
    """The LLM tokens the answer cost (0 when no LLM wrote it: an extractive, FAQ or not-found answer)."""
    usage = ((finish or {}).get("timings") or {}).get("usage") or {}
    prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


@dataclass(frozen=True)
class Reply:
    """The identity every object of one reply carries."""

    id: str
    model: str
    created: int

    @classmethod
    def new(cls, *, model: str, message_id: int) -> Reply:
        return cls(id=f"chatcmpl-zhiku-{message_id}", model=model, created=int(time.time()))

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> dict[str, Any]:
        return {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                "system_fingerprint": None,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}], **extra}

    def usage_chunk(self, usage: dict[str, int]) -> dict[str, Any]:
        """OpenAI's last chunk for ``stream_options.include_usage``: no choices, the usage."""
        return {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                "system_fingerprint": None, "choices": [], "usage": usage}

    def completion(self, content: str, finish: dict[str, Any], sources: list[dict[str, Any]]) -> dict[str, Any]:
        message = {"role": "assistant", "content": content, "refusal": None, "zhiku": extension(finish, sources)}
        return {"id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
                "system_fingerprint": None,
                "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}],
                "usage": usage_block(finish)}


def sse(data: dict[str, Any] | str) -> bytes:
    """One ``data:`` frame (OpenAI sends no ``event:`` line)."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"data: {text}\n\n".encode()
