"""What a platform gives the callback view and the reply job (bots/platforms/: feishu.py, dingtalk.py, wecom.py).

One refusal for everything a callback can get wrong: a missing or wrong signature or token, a timestamp outside
its window, a reused signature, a body that cannot be decrypted or parsed. Each answers the same status, code and
message (``bot_signature_invalid``, 403), so no answer tells a bad padding from a bad token or a bad JSON (a
padding oracle needs two answers to tell apart). Why it was refused is kept on the exception (``extra["reason"]``)
for the log and the channel's self-test, never put in the answer.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from django.http import HttpResponse

from bots.errors import BotsError
from core import safejson
from core.errors import ApplicationError, fail


@dataclass(frozen=True)
class Incoming:
    """A question to answer: the platform's event id (answered once), the chat it came from, where the reply goes."""

    event_id: str
    question: str
    chat: str
    reply_to: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Outcome:
    """The answer the platform gets at once, and the question to answer later (None: nothing to answer)."""

    response: HttpResponse
    incoming: Incoming | None = None


def refused(reason: str) -> ApplicationError:
    """The one refusal (``bot_signature_invalid``); ``reason`` is logged, never answered."""
    return fail(BotsError.BOT_SIGNATURE_INVALID, extra={"reason": reason})


def unreadable(detail: str) -> ApplicationError:
    """A request no platform sends (a wrong method): nothing secret is involved, so it may say what is wrong."""
    return fail(BotsError.BOT_EVENT_INVALID, detail=detail)


def json_object(raw: bytes, limit: int) -> dict[str, Any]:
    """The body as a JSON object (``core.safejson``'s limits), else the one refusal."""
    try:
        value = safejson.loads(raw or b"null", limit_bytes=limit)
    except ApplicationError as exc:
        raise refused(f"the body is not JSON: {exc.message}") from None
    if not isinstance(value, dict):
        raise refused("the body is not a JSON object")
    return value


def stamp(value: str, *, digits: int) -> int:
    """A timestamp as the platform sends it (whole seconds or milliseconds, ASCII digits), else the one refusal."""
    if not value.isascii() or not value.isdigit() or len(value) > digits:
        raise refused(f"the timestamp {value[:20]!r} is not a number")
    return int(value)


def check_fresh(seconds: float, *, window: int, setting: str) -> None:
    """``seconds`` (Unix time) is within ``window`` seconds of now, before or after; else the one refusal."""
    off = seconds - time.time()
    if abs(off) > window:
        raise refused(f"the timestamp is {abs(off):.0f} s {'ahead of' if off > 0 else 'behind'} this server's clock, "
                      f"outside {setting} ({window} s)")
