"""What a platform module gives the callback view and the reply job (bots/feishu.py, dingtalk.py, wecom.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.http import HttpResponse

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


def refused(detail: str) -> Exception:
    return fail("bot_signature_invalid", detail=detail)


def unreadable(detail: str) -> Exception:
    return fail("bot_event_invalid", detail=detail)


def json_object(raw: bytes, limit: int) -> dict[str, Any]:
    """The body as a JSON object (``core.safejson``'s limits), else ``bot_event_invalid``."""
    try:
        value = safejson.loads(raw or b"null", limit_bytes=limit)
    except ApplicationError as exc:
        raise unreadable(exc.message) from None
    if not isinstance(value, dict):
        raise unreadable("the body is not a JSON object")
    return value
