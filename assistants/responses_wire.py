"""OpenAI's Responses wire format (``POST /v1/responses``): the request read into a question, its history and how
to answer it; the chat pipeline's events written back as one ``response`` object or as the typed events of OpenAI's
Responses streaming (https://platform.openai.com/docs/api-reference/responses-streaming), errors in OpenAI's shape.

Plain functions over dicts, no Django views: assistants/openai_responses.py does the HTTP. The answer's citations
are its output text's ``annotations`` (a ``url_citation`` over the ``[n]`` marker where the cited document has a web
address, else a ``file_citation`` at the marker naming the document); the response also carries the ``zhiku``
extension a chat completion carries (docs/integrations.md, "Responses API").
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from assistants.errors import AssistantsError
from assistants.openai_wire import MAX_MESSAGES, extension, token_cap, usage_block
from chat.prompts import citation_marks
from core.errors import ApplicationError, fail

INPUT_ROLES = ("user", "assistant", "system", "developer")
TEXT_PARTS = ("input_text", "output_text")  # an assistant message sent back holds the output_text it was given
RESPONSE_PARAMS = {"empty_question": "input", "question_too_long": "input"}
FAILED = "server_error"
"""A failed response's ``error.code``: OpenAI's ``ResponseError`` names a fixed set; ours is in the ``error`` event."""
_ID = re.compile(r"resp_zhiku_([1-9][0-9]{0,17})")
_WEB = re.compile(r"^https?://", re.IGNORECASE)


@dataclass(frozen=True)
class ResponsesRequest:
    """What a responses body asks: the question, the (role, content) pairs before it, how to answer and store it."""

    question: str
    history: list[tuple[str, str]] = field(default_factory=list)
    stream: bool = False
    store: bool = True
    previous_response_id: str | None = None
    max_output_tokens: int | None = None
    model: str = ""


def _bad(variant: str | None, param: str | None, **params: Any) -> ApplicationError:
    return fail(AssistantsError.INVALID_RESPONSE_REQUEST, variant, extra={"param": param}, **params)


def _content(content: Any) -> str | None:
    """A message item's text: a string, or a list of input_text / output_text parts (images and files are not read)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts: list[str] = []
    for part in content:
        text = part.get("text") if isinstance(part, dict) and part.get("type") in TEXT_PARTS else None
        if not isinstance(text, str):
            return None
        texts.append(text)
    return "\n".join(texts)


def _items(value: Any) -> list[tuple[str, str]]:
    """``input`` as (role, text) pairs: a string is one user message; a list holds message items."""
    if isinstance(value, str):
        return [("user", value)]
    if not isinstance(value, list) or not value or len(value) > MAX_MESSAGES:
        raise _bad("input", "input", limit=MAX_MESSAGES)
    out = []
    for i, item in enumerate(value):
        is_message = isinstance(item, dict) and item.get("type", "message") == "message" and item.get("role") in INPUT_ROLES
        text = _content(item.get("content")) if is_message else None
        if text is None:
            raise _bad("item", f"input[{i}]")
        out.append((item["role"], text))
    return out


def _optional(body: dict[str, Any], name: str, kind: type) -> Any:
    value = body.get(name)
    if value is not None and not isinstance(value, kind):
        raise _bad(name, name)
    return value


def responses_request(body: Any) -> ResponsesRequest:
    """The body read: the last user message of ``input`` is the question, the user and assistant messages before it
    its history. ``instructions`` and system / developer messages are left out (the assistant's own prompt applies,
    as in chat completions); tools, reasoning, temperature and the other generation options are not read.
    400 ``invalid_response_request`` (with ``extra["param"]``) for a body OpenAI would refuse.
    """
    if not isinstance(body, dict):
        raise _bad(None, None)
    if "input" not in body or body["input"] is None:
        raise _bad("input", "input", limit=MAX_MESSAGES)
    items = _items(body["input"])
    stream, store = _optional(body, "stream", bool), _optional(body, "store", bool)
    model, previous = _optional(body, "model", str), _optional(body, "previous_response_id", str)
    _optional(body, "instructions", str)
    cap = token_cap(body.get("max_output_tokens"), AssistantsError.INVALID_RESPONSE_REQUEST, "max_output_tokens")
    users = [i for i, (role, _) in enumerate(items) if role == "user"]
    if not users:
        raise _bad("no_user", "input")
    last = users[-1]
    history = [(role, text) for role, text in items[:last] if role in ("user", "assistant") and text.strip()]
    return ResponsesRequest(question=items[last][1], history=history, stream=bool(stream), store=store is not False,
                            previous_response_id=previous, max_output_tokens=cap, model=model or "")


def response_id(message_id: int) -> str:
    """The id of the response written to the assistant message ``message_id``."""
    return f"resp_zhiku_{message_id}"


def message_id_of(value: str) -> int | None:
    """The assistant message a response id names, or None for an id this server never gave."""
    match = _ID.fullmatch(value)
    return int(match.group(1)) if match else None


# --- the answer, written back ------------------------------------------------------------------------------------

def _annotation(citation: dict[str, Any], start: int, end: int, index: int) -> dict[str, Any]:
    document = citation.get("document") or {}
    title = str(document.get("title") or document.get("source_name") or "")
    url = str(document.get("source_url") or "")
    if _WEB.match(url):
        return {"type": "url_citation", "url": url, "title": title, "start_index": start, "end_index": end}
    return {"type": "file_citation", "file_id": str(document.get("id") or ""), "filename": title, "index": index}


def citation_annotations(text: str, citations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One annotation per source a ``[n]`` marker of ``text`` cites, at that marker (``text[start_index:end_index]``
    of a url_citation, ``text[index:]`` of a file_citation start with it), in the text's order; a source cited
    without a marker (a FAQ's answer is its whole text) spans the whole text, its file_citation at the end."""
    by_n = {c["n"]: c for c in citations}
    out, marked = [], set()
    for start, end, numbers in citation_marks(text):
        for n in numbers:
            if n in by_n:
                out.append(_annotation(by_n[n], start, end, start))
                marked.add(n)
    out.extend(_annotation(c, 0, len(text), len(text)) for c in citations if c["n"] not in marked)
    return out


def response_usage(finish: dict[str, Any] | None) -> dict[str, Any]:
    """The LLM tokens the answer cost, in the Responses shape (0 when no LLM wrote it)."""
    usage = usage_block(finish)
    return {"input_tokens": usage["prompt_tokens"], "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": usage["completion_tokens"], "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage["total_tokens"]}


def output_text(text: str, notes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": notes or [], "logprobs": []}


@dataclass(frozen=True)
class ResponseReply:
    """The identity every object of one response carries, and what the request asked of it."""

    id: str
    item_id: str
    model: str
    created_at: int
    asked: ResponsesRequest

    @classmethod
    def new(cls, *, model: str, message_id: int, asked: ResponsesRequest) -> ResponseReply:
        return cls(id=response_id(message_id), item_id=f"msg_zhiku_{message_id}", model=model,
                   created_at=int(time.time()), asked=asked)

    def item(self, status: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
        return {"id": self.item_id, "type": "message", "status": status, "role": "assistant", "content": parts}

    def response(self, status: str, output: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        """The ``response`` object (``extra``: usage, error, zhiku)."""
        return {
            "id": self.id, "object": "response", "created_at": self.created_at, "status": status,
            "completed_at": int(time.time()) if status == "completed" else None, "background": False,
            "error": None, "incomplete_details": None, "instructions": None,
            "max_output_tokens": self.asked.max_output_tokens, "model": self.model, "output": output,
            "parallel_tool_calls": True, "previous_response_id": self.asked.previous_response_id,
            "store": self.asked.store, "temperature": None, "text": {"format": {"type": "text"}},
            "tool_choice": "auto", "tools": [], "top_p": None, "truncation": "disabled", "usage": None, "user": None,
            "metadata": {}, **extra,
        }

    def completed(self, finish: dict[str, Any], sources: list[dict[str, Any]]) -> dict[str, Any]:
        """The whole answer: one assistant message of one output_text with its annotations, usage and ``zhiku``."""
        text = finish["answer"]
        part = output_text(text, citation_annotations(text, finish.get("citations") or []))
        return self.response("completed", [self.item("completed", [part])], usage=response_usage(finish),
                             zhiku=extension(finish, sources))

    def failed(self, exc: ApplicationError, partial: str) -> dict[str, Any]:
        """A response that failed after it started: its error, and the partial answer as an incomplete message."""
        output = [self.item("incomplete", [output_text(partial)])] if partial else []
        return self.response("failed", output, error={"code": FAILED, "message": exc.message},
                             zhiku={"error_code": exc.code})


class ResponseEvents:
    """The stream's SSE frames, each an ``event:`` line and a ``data:`` object with ``type`` and ``sequence_number``
    counting from 0, in the documented order: created, in_progress, output_item.added, content_part.added, a
    delta per token, then annotation.added per annotation, output_text.done, content_part.done, output_item.done
    and completed, or else ``error`` and ``response.failed``."""

    def __init__(self, reply: ResponseReply) -> None:
        self.reply = reply
        self.sequence = 0
        self.text: list[str] = []

    def frame(self, kind: str, **fields: Any) -> bytes:
        data = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()

    def _at(self) -> dict[str, Any]:
        return {"item_id": self.reply.item_id, "output_index": 0, "content_index": 0}

    def opening(self) -> list[bytes]:
        started = self.reply.response("in_progress", [])
        return [self.frame("response.created", response=started), self.frame("response.in_progress", response=started),
                self.frame("response.output_item.added", output_index=0, item=self.reply.item("in_progress", [])),
                self.frame("response.content_part.added", **self._at(), part=output_text(""))]

    def delta(self, text: str) -> bytes:
        self.text.append(text)
        return self.frame("response.output_text.delta", **self._at(), delta=text, logprobs=[])

    def closing(self, finish: dict[str, Any], sources: list[dict[str, Any]]) -> list[bytes]:
        whole = self.reply.completed(finish, sources)
        item = whole["output"][0]
        part = item["content"][0]
        frames = [self.frame("response.output_text.annotation.added", **self._at(), annotation_index=i, annotation=note)
                  for i, note in enumerate(part["annotations"])]
        return [*frames, self.frame("response.output_text.done", **self._at(), text=part["text"], logprobs=[]),
                self.frame("response.content_part.done", **self._at(), part=part),
                self.frame("response.output_item.done", output_index=0, item=item),
                self.frame("response.completed", response=whole)]

    def failure(self, exc: ApplicationError) -> list[bytes]:
        return [self.frame("error", code=exc.code, message=exc.message, param=None),
                self.frame("response.failed", response=self.reply.failed(exc, "".join(self.text)))]
