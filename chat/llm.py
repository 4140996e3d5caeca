"""Answer generators: an OpenAI-compatible streaming client, the LLM as a not-found judge, and streaming a ready text."""
from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils.translation import gettext

from chat.extractive import extractive_answer as extractive_answer  # re-exported: tests/chat/test_chat_prompts.py imports it from here
from chat.prompts import NOT_FOUND_MARKER
from providers.catalog import choice_api_key, choice_get

# --- configuration ------------------------------------------------------------

@dataclass(frozen=True)
class LLMConfig:
    """Where and how to reach an OpenAI-compatible chat-completions endpoint."""

    base_url: str
    model: str
    api_key: str = ""
    timeout: float = 60.0
    """Seconds for connecting and for each read: a stream that stalls this long fails."""
    max_retries: int = 1
    """Retries of a request that failed before any answer streamed (the SDK's backoff)."""
    temperature: float = 0.2
    max_tokens: int = 1024
    rewrite_timeout: float = 15.0


def _setting(name: str, default: str = "") -> str:
    value = getattr(settings, name, default)
    return str(value if value is not None else default).strip()


def llm_config_for(model: str = "") -> LLMConfig | None:
    """The LLM offering the model choice ``model`` ("" the site's default), or None: not offered, or no LLM at all.

    ``model`` is a choice string of providers/catalog.py: a model of the environment's endpoint
    (ZHIKU_LLM_*) or of an endpoint set up in the console, with that endpoint's base URL and key. The site's
    default is the console's default endpoint and model when one is chosen, else ZHIKU_LLM_MODEL. Reads
    the database: call it from a thread, not the event loop.
    """
    choice = choice_get(model)
    if choice is None:
        return None
    return LLMConfig(
        base_url=choice.base_url, model=choice.model, api_key=choice_api_key(choice),
        timeout=float(_setting("ZHIKU_LLM_TIMEOUT", "60") or 60),
        max_retries=int(_setting("ZHIKU_LLM_MAX_RETRIES", "1") or 1),
    )


def llm_config() -> LLMConfig | None:
    """The site's default LLM (``llm_config_for("")``), or None: extractive answers."""
    return llm_config_for("")


class LLMError(Exception):
    """The LLM call failed; ``code`` is ``llm_timeout`` or ``llm_failed``."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def _classify(exc: BaseException) -> LLMError:
    import openai

    names = {cls.__name__ for cls in type(exc).__mro__}
    if isinstance(exc, openai.APITimeoutError) or "TimeoutException" in names or isinstance(exc, TimeoutError):
        return LLMError("llm_timeout", gettext("The language model did not answer in time."))
    if isinstance(exc, openai.APIStatusError):
        return LLMError("llm_failed", gettext("The language model returned HTTP %(status)s.") % {"status": exc.status_code})
    return LLMError("llm_failed", gettext("The language model connection failed (%(error)s).") % {"error": type(exc).__name__})


def _client(config: LLMConfig, *, timeout: float | None = None):
    from openai import AsyncOpenAI

    # A client per answer: its connection pool belongs to the running event loop.
    return AsyncOpenAI(
        base_url=config.base_url, api_key=config.api_key or "not-needed",
        timeout=timeout or config.timeout, max_retries=config.max_retries,
    )


async def llm_stream(config: LLMConfig, messages: list[dict[str, str]],
                     usage: dict[str, int] | None = None) -> AsyncGenerator[str, None]:
    """Yield the answer's text deltas as they arrive; ``LLMError`` on a failure before or during the stream.

    Closing the generator (cancel, disconnect) closes the HTTP response, so the server stops generating.
    ``usage``, when given, receives the endpoint's ``prompt_tokens`` and ``completion_tokens`` (asked for with
    ``stream_options.include_usage``; an endpoint that ignores the option leaves it empty).
    """
    try:
        async with _client(config) as client:
            stream = await client.chat.completions.create(
                model=config.model, messages=messages, stream=True,
                temperature=config.temperature, max_tokens=config.max_tokens,
                stream_options={"include_usage": True},
            )
            try:
                async for chunk in stream:
                    if usage is not None and getattr(chunk, "usage", None) is not None:
                        usage.update(prompt_tokens=int(chunk.usage.prompt_tokens or 0),
                                     completion_tokens=int(chunk.usage.completion_tokens or 0))
                    if not chunk.choices:
                        continue
                    delta = chunk.choices[0].delta.content
                    if delta:
                        yield delta
            finally:
                await stream.close()
    except LLMError:
        raise
    except Exception as exc:  # every SDK and transport failure becomes one of two codes
        raise _classify(exc) from exc


async def llm_complete(config: LLMConfig, messages: list[dict[str, str]], *, max_tokens: int = 128,
                       usage: dict[str, Any] | None = None) -> str:
    """A short non-streamed completion (the follow-up rewrite). ``usage``, when given, receives what it cost
    (the endpoint's counts, else an estimate: :func:`usage_of`)."""
    try:
        async with _client(config, timeout=min(config.timeout, config.rewrite_timeout)) as client:
            response = await client.chat.completions.create(
                model=config.model, messages=messages, stream=False, temperature=0, max_tokens=max_tokens,
            )
    except Exception as exc:  # as in llm_stream: one of two codes
        raise _classify(exc) from exc
    text = (response.choices[0].message.content or "") if response.choices else ""
    if usage is not None:
        counted = getattr(response, "usage", None)
        reported = ({"prompt_tokens": int(counted.prompt_tokens or 0), "completion_tokens": int(counted.completion_tokens or 0)}
                    if counted is not None else {})
        usage.update(usage_of(reported, messages, text))
    return text


_CJK = re.compile(r"[\u3000-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


def tokens_estimate(text: str) -> int:
    """A rough token count for an endpoint that reports none: a CJK character a token, four other characters a token.

    The BPE vocabularies of the Chinese-first models (Qwen, DeepSeek, GLM) hold most common characters and many
    two-character words, so a character a token errs a little high for Chinese; four characters a token is the
    usual figure for English text.
    """
    cjk = len(_CJK.findall(text))
    return cjk + -(-(len(text) - cjk) // 4)


def usage_add(first: dict[str, Any] | None, second: dict[str, Any] | None) -> dict[str, Any] | None:
    """Two calls' usage as one (the rewrite's and the answer's); estimated when either was."""
    if not first or not second:
        return first or second
    total = {key: int(first.get(key, 0)) + int(second.get(key, 0)) for key in ("prompt_tokens", "completion_tokens")}
    if first.get("estimated") or second.get("estimated"):
        total["estimated"] = True
    return total


def usage_of(usage: dict[str, int], messages: list[dict[str, str]], answer: str) -> dict[str, Any]:
    """What a streamed answer cost: the endpoint's counts, else an estimate marked ``"estimated": true``."""
    if usage:
        return {"prompt_tokens": usage["prompt_tokens"], "completion_tokens": usage["completion_tokens"]}
    prompt = sum(tokens_estimate(str(m.get("content") or "")) + 4 for m in messages)  # 4: the role's framing
    return {"prompt_tokens": prompt, "completion_tokens": tokens_estimate(answer), "estimated": True}


# --- the LLM as a second "not found" judge ---------------------------------------

# What may surround the marker: whitespace, quotes, code ticks, emphasis and sentence punctuation.
_MARKER_EDGE = " \t\r\n\u3000`'\"“”‘’「」『』*_.,;:!?。，；：！？、"


def _marker_start(text: str) -> int:
    """The length of the longest end of ``text`` that could be the beginning of the marker."""
    for k in range(min(len(text), len(NOT_FOUND_MARKER) - 1), 0, -1):
        if NOT_FOUND_MARKER.startswith(text[-k:]):
            return k
    return 0


@dataclass
class MarkerGuard:
    """Keeps the not-found marker out of the streamed answer and notes when the reply is the marker.

    The reply's beginning is held back while, without leading whitespace and
    punctuation, it could still become the marker; a reply that starts with the
    marker is the LLM saying the sources do not hold the answer (``not_found``).
    After real text a marker is dropped and the answer stands; text that could
    be the beginning of one is held back until it cannot.
    """

    not_found: bool = False
    started: bool = False
    pending: str = ""

    def feed(self, delta: str) -> str:
        """Take the next delta; return the text that can be streamed now."""
        self.pending += delta
        if not self.started:
            head = self.pending.lstrip(_MARKER_EDGE)
            if head.startswith(NOT_FOUND_MARKER):
                self.not_found = True
                return ""
            if NOT_FOUND_MARKER.startswith(head):
                return ""
            self.started = True
        text = self.pending.replace(NOT_FOUND_MARKER, "")
        ready = len(text) - _marker_start(text)
        self.pending = text[ready:]
        return text[:ready]

    def flush(self) -> str:
        """The reply ended: return what was held back (a reply that was only a cut-off marker is not found)."""
        text, self.pending = self.pending, ""
        if not self.started and text.lstrip(_MARKER_EDGE):
            self.not_found = True
            return ""
        return text


async def judged_stream(deltas: AsyncGenerator[str, None], guard: MarkerGuard,
                        not_found_text: str) -> AsyncGenerator[str, None]:
    """``deltas`` through ``guard``; once the reply is the marker the LLM stream is closed and ``not_found_text`` streamed."""
    async with aclosing(deltas):
        async for delta in deltas:
            if text := guard.feed(delta):
                yield text
            if guard.not_found:
                break
    if not guard.not_found and (text := guard.flush()):
        yield text
    if guard.not_found:
        async for piece in text_stream(not_found_text):
            yield piece


# --- streaming a ready text ------------------------------------------------------

_PIECE_RE = re.compile(r"\[\d+\]|\n+|[^\[\n]{1,4}|\[", re.DOTALL)


def pieces(text: str) -> list[str]:
    """Small pieces of ``text`` for streaming (a few characters each; a ``[n]`` marker is never split)."""
    return _PIECE_RE.findall(text)


async def text_stream(text: str) -> AsyncGenerator[str, None]:
    """Stream a ready text (extractive answer, not-found text) in small pieces, yielding to the loop between them."""
    for piece in pieces(text):
        yield piece
        await asyncio.sleep(0)
