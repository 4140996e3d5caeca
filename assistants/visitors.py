"""Visitors of a share link or an embedded chat: who they are, how often they may ask, and what they are shown.

A visitor is an opaque id, ``v-`` and 128 random bits kept signed by the server (a share link's cookie, an embed's
*ticket*), or ``user:<pk>`` for a signed-in member; their conversations are the assistant's with that ``visitor``.
``public_event`` shows the answer, its verdict and of each source only its title, section, pages and text.
Throttling is a fixed one-minute window per visitor and per client address in Redis, as the keys' budget is
(assistants/keys.py); without Redis each process counts alone.
"""
from __future__ import annotations

import secrets
import time
from typing import Any

from django.conf import settings
from django.core import signing

from assistants.errors import AssistantsError
from assistants.models import Assistant
from assistants.ratelimit import minute_count
from chat.errors import ChatError
from chat.history import readable_view
from chat.models import Conversation, Feedback, Message, MessageStatus, Rating, Role
from core.errors import fail

TICKET_SALT = "assistants.embed.ticket"
COOKIE_SALT = "assistants.share.visitor"
CONVERSATIONS_SHOWN = 30
VISITOR_DAYS = 180
"""How long a visitor's cookie or ticket is honoured; then they start afresh."""


def visitor_new() -> str:
    return "v-" + secrets.token_urlsafe(16)


def member_visitor(user) -> str:
    """The visitor id of a signed-in member: the same conversations on every device they sign in on."""
    return f"user:{user.pk}"


# --- the embed's ticket ---------------------------------------------------------------------------------------

def ticket_issue(*, assistant_id: int, visitor: str, origin: str) -> str:
    """A signed ticket naming the assistant, the visitor and the origin of the page that embeds the chat."""
    return signing.dumps({"a": int(assistant_id), "v": visitor, "o": origin}, salt=TICKET_SALT)


def ticket_read(value: str, *, assistant_id: int) -> tuple[str, str] | None:
    """(visitor, origin) of a ticket of this assistant the server signed (``signing.dumps`` is timestamped) within
    ``VISITOR_DAYS``; None for any other value."""
    try:
        data = signing.loads((value or "")[:500], salt=TICKET_SALT, max_age=VISITOR_DAYS * 24 * 3600)
    except signing.BadSignature:
        return None
    if not isinstance(data, dict) or data.get("a") != int(assistant_id):
        return None
    visitor, origin = data.get("v"), data.get("o")
    if not (isinstance(visitor, str) and visitor.startswith("v-") and isinstance(origin, str)):
        return None
    return visitor, origin


# --- throttling -----------------------------------------------------------------------------------------------

def visitor_throttle(*, assistant_id: int, visitor: str, address: str) -> None:
    """Count one question of ``visitor`` (and of the client ``address``); ``visitor_rate_limited`` (429) past either
    limit (``ZHIKU_VISITOR_RATE_LIMIT`` a visitor, ``ZHIKU_VISITOR_IP_RATE_LIMIT`` an address, a minute)."""
    now = time.time()
    window = int(now // 60)
    retry = max(1, 60 - int(now % 60))
    limits = ((f"v:{assistant_id}:{visitor}", int(getattr(settings, "ZHIKU_VISITOR_RATE_LIMIT", 20))),
              (f"ip:{address}", int(getattr(settings, "ZHIKU_VISITOR_IP_RATE_LIMIT", 60))))
    for name, limit in limits:
        if minute_count("visitorrate", name, window) > limit:
            raise fail(AssistantsError.VISITOR_RATE_LIMITED, limit=limit, retry=retry, extra={"retry_after": retry})


# --- what a visitor is shown ----------------------------------------------------------------------------------

def public_source(entry: Any) -> dict[str, Any]:
    """A source or citation as a visitor sees it: its number, document title, section, pages and text, and the web
    address the document came from (a web page's URL, docs/sources/web.md) when it has one."""
    if not isinstance(entry, dict) or entry.get("redacted"):
        return {"n": entry.get("n") if isinstance(entry, dict) else None, "redacted": True}
    document = entry.get("document")
    if not isinstance(document, dict):
        document = {}
    out = {"n": entry.get("n"), "title": document.get("title") or document.get("source_name") or "",
           "section_path": [str(s) for s in entry.get("section_path") or []], "pages": entry.get("pages") or {}}
    url = str(document.get("source_url") or "")
    if url.lower().startswith(("http://", "https://")):
        out["url"] = url
    if "content" in entry:
        out["content"] = str(entry.get("content") or "")
    return out


def public_event(event: dict[str, Any]) -> dict[str, Any] | None:
    """The visitor's view of a ``chat.services.turn_stream`` event; None for one they are not sent (``rewrite``)."""
    kind = event.get("type")
    if kind == "start":
        return {"type": "start", "conversation": event["conversation"], "message": event["message"], "title": event["title"]}
    if kind == "sources":
        return {"type": "sources", "verdict": event["verdict"], "sources": [public_source(s) for s in event["sources"]]}
    if kind == "token":
        return event
    if kind == "finish":
        return {"type": "finish", "conversation": event["conversation"], "message": event["message"],
                "answer": event["answer"], "verdict": event["verdict"], "hit": event["hit"],
                "citations": [public_source(c) for c in event["citations"]]}
    if kind == "error":
        return {"type": "error", "code": event["code"], "message": event["message"], "partial": event.get("partial", "")}
    return None


# --- a visitor's conversations and feedback -------------------------------------------------------------------

def _conversations(assistant: Assistant, visitor: str):
    return Conversation.objects.filter(assistant=assistant, visitor=visitor)


def visitor_conversations(*, assistant: Assistant, visitor: str) -> list[dict[str, Any]]:
    """The visitor's own conversations with this assistant, most recent first."""
    rows = _conversations(assistant, visitor).order_by("-updated_at", "-id")[:CONVERSATIONS_SHOWN]
    return [{"id": c.pk, "title": c.title, "updated_at": c.updated_at.isoformat()} for c in rows]


def visitor_conversation(*, assistant: Assistant, visitor: str, conversation_id: Any) -> dict[str, Any]:
    """One of the visitor's conversations with its messages (as the owner may read them now: chat/history.py)."""
    try:
        conversation = _conversations(assistant, visitor).get(pk=int(conversation_id))
    except (Conversation.DoesNotExist, TypeError, ValueError):
        raise fail(ChatError.CONVERSATION_NOT_FOUND) from None
    messages = list(conversation.messages.order_by("id"))
    readable = readable_view(user=assistant.owner, messages=messages)
    rated = dict(Feedback.objects.filter(message__conversation=conversation, user=assistant.owner)
                 .values_list("message_id", "rating"))
    out = []
    for m in messages:
        view = readable[m.pk]
        entry: dict[str, Any] = {"id": m.pk, "role": m.role, "content": view.content}
        if m.role == Role.ASSISTANT:
            entry.update(verdict=m.verdict or "", status=m.status, feedback=rated.get(m.pk),
                         sources=[public_source(s) for s in view.sources],
                         citations=[public_source(c) for c in view.citations])
        out.append(entry)
    return {"id": conversation.pk, "title": conversation.title, "messages": out}


def visitor_feedback(*, assistant: Assistant, visitor: str, message_id: Any, rating: Any) -> str:
    """Rate an answer in one of the visitor's conversations (recorded as the owner's, for the usage counts)."""
    if rating not in Rating.values:
        raise fail(ChatError.INVALID_RATING)
    try:
        message = Message.objects.get(pk=int(message_id), role=Role.ASSISTANT, status=MessageStatus.COMPLETE,
                                      conversation__assistant=assistant, conversation__visitor=visitor)
    except (Message.DoesNotExist, TypeError, ValueError):
        raise fail(ChatError.MESSAGE_NOT_FOUND) from None
    Feedback.objects.update_or_create(message=message, user=assistant.owner, defaults={"rating": rating, "reason": ""})
    return rating
