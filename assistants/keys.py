"""API keys of assistants and KBs: issued once in clear, stored as SHA-256, revocable, rate-limited per key.

A key is ``zk-`` and 43 URL-safe characters (256 random bits), so a digest lookup needs no salt or slow hash
(the key has the entropy a password lacks). ``key_authenticate`` is the one check every protocol adapter
(OpenAI-compatible chat, MCP, Dify's external knowledge) makes: the key exists, is not revoked, its creator is
still active, and it is inside its per-minute budget. What the key may then read is decided by the caller's
access *now* (``assistants.services``), never by what was true when the key was issued.
"""
from __future__ import annotations

import hashlib
import secrets
import time

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from assistants.errors import AssistantsError
from assistants.models import ApiKey, Assistant, KeyKind
from assistants.ratelimit import minute_count
from core.audit import Action, record
from core.errors import fail
from core.last_used import touch_last_used

KEY_PREFIX = "zk-"


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def _new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def key_issue(*, created_by, assistant: Assistant | None = None, kb=None, name: str = "",
              rate_limit: int | None = None) -> tuple[ApiKey, str]:
    """A new key of ``assistant`` or of ``kb`` (exactly one) and the key itself: the only time it is known.

    The caller has checked that ``created_by`` may issue it (``services.assistant_key_create`` /
    ``services.kb_key_create``).
    """
    if (assistant is None) == (kb is None):
        raise ValueError("a key belongs to exactly one assistant or one KB")
    key = _new_key()
    row = ApiKey.objects.create(
        kind=KeyKind.ASSISTANT if assistant is not None else KeyKind.KB, assistant=assistant, kb=kb,
        created_by=created_by, name=(name or "")[:100], prefix=key[:10], digest=key_digest(key), rate_limit=rate_limit,
    )
    record(Action.KEY_CREATE, obj=row, kb=kb, object_repr=_key_repr(row),
           changes={"kind": row.kind, "assistant": assistant.name if assistant is not None else None, "name": row.name,
                    "rate_limit": rate_limit})
    return row, key


def _key_repr(row: ApiKey) -> str:
    return f"{row.name or '-'} ({row.prefix}…)"


def key_revoke(*, key: ApiKey) -> None:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        with transaction.atomic():
            if ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=key.revoked_at):
                record(Action.KEY_REVOKE, obj=key, kb=key.kb if key.kb_id else None, object_repr=_key_repr(key),
                       changes={"kind": key.kind, "name": key.name})


def keys_of(*, assistant: Assistant | None = None, kb=None) -> QuerySet[ApiKey]:
    """The live (unrevoked) keys of an assistant or a KB, newest first."""
    qs = ApiKey.objects.filter(revoked_at__isnull=True)
    return qs.filter(assistant=assistant) if assistant is not None else qs.filter(kb=kb)


def bearer_key(header: str) -> str:
    """The key of an ``Authorization: Bearer <key>`` header; ``key_missing`` (401) for any other header."""
    scheme, _, key = (header or "").partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or not key:
        raise fail(AssistantsError.KEY_MISSING)
    return key[:200]


def key_authenticate(key: str, *, kind: str | None = None) -> ApiKey:
    """The live key ``key`` (with its assistant or KB and creator loaded), within its rate limit.

    401 ``key_invalid`` for an unknown or revoked key or an inactive creator; 403 ``key_wrong_kind`` when
    ``kind`` is given and the key is of the other kind; 429 ``key_rate_limited`` over its budget.
    """
    row = (ApiKey.objects.select_related("assistant", "assistant__owner", "kb", "created_by")
           .filter(digest=key_digest(key), revoked_at__isnull=True).first())
    if row is None or not row.created_by.is_active or (row.assistant is not None and not row.assistant.owner.is_active):
        raise fail(AssistantsError.KEY_INVALID)
    if kind is not None and row.kind != kind:
        raise fail(AssistantsError.KEY_WRONG_KIND, needed=KeyKind(kind).label)
    rate_check(row)
    key_touch(row)
    return row


def key_touch(row: ApiKey) -> None:
    """Record that ``row`` authenticated a request now (at most one write a minute)."""
    touch_last_used(row, field="last_used_at")


# --- the per-key budget: a fixed one-minute window, in Redis when there is one (shared by every worker) ----------

def _limit_of(row: ApiKey) -> int:
    default: int = getattr(settings, "ZHIKU_KEY_RATE_LIMIT", 60)
    return int(row.rate_limit or default)


def rate_check(row: ApiKey) -> None:
    """Count one request of ``row`` in the current minute; ``key_rate_limited`` (429) past its limit."""
    limit = _limit_of(row)
    now = time.time()
    window = int(now // 60)
    count = minute_count("keyrate", row.pk, window)
    if count > limit:
        raise fail(AssistantsError.KEY_RATE_LIMITED, limit=limit, retry=max(1, 60 - int(now % 60)),
                   extra={"retry_after": max(1, 60 - int(now % 60))})
