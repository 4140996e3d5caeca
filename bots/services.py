"""Channels: add, change and remove them (audited, secrets never in an entry); their credentials; received events;
what each callback is allowed (the per-channel rate, DingTalk's signatures taken once).

Who may manage an assistant's channels is who may manage the assistant (``assistants.services.assistant_get_for_user``:
its owner, or a superuser); the views and the command find the assistant that way first.
"""
from __future__ import annotations

import hashlib
import json
import logging
import secrets
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from assistants.models import Assistant
from assistants.ratelimit import minute_count
from bots.errors import BotsError
from bots.kinds import clean_credentials, clean_settings, kind_of, require
from bots.models import BotChannel, BotEvent, BotSignatureUse
from core.audit import Action, diff, record, snapshot
from core.errors import fail
from providers.secrets import InvalidToken, secret_decrypt, secret_encrypt

logger = logging.getLogger(__name__)

NAME_LIMIT = 100
_UNSET: Any = object()
# What a channel's audit entries compare: never the credentials' values, only which are stored.
_AUDITED = ("name", "settings", "enabled", "credential_names")


def channels_of(assistant: Assistant):
    return BotChannel.objects.filter(assistant=assistant).select_related("assistant")


def channel_get(*, assistant: Assistant, channel_id: Any) -> BotChannel:
    try:
        return channels_of(assistant).get(pk=int(channel_id))
    except (BotChannel.DoesNotExist, TypeError, ValueError):
        raise fail(BotsError.BOT_CHANNEL_NOT_FOUND) from None


def channel_credentials(channel: BotChannel) -> dict[str, str]:
    """The decrypted secrets (the callbacks' and the replies'; nothing shows them)."""
    if not channel.credentials:
        return {}
    try:
        value = json.loads(secret_decrypt(channel.credentials))
    except InvalidToken:
        raise fail(BotsError.BOT_CREDENTIALS_UNREADABLE) from None
    return value if isinstance(value, dict) else {}


def _store_credentials(channel: BotChannel, credentials: dict[str, str]) -> None:
    kept = {k: v for k, v in credentials.items() if v}
    channel.credentials = secret_encrypt(json.dumps(kept, sort_keys=True)) if kept else ""
    channel.credential_names = sorted(kept)


def _clean_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > NAME_LIMIT:
        raise fail(BotsError.BOT_CHANNEL_INVALID, "name", limit=NAME_LIMIT, on_field="name")
    return name.strip()


def _save(channel: BotChannel) -> None:
    try:
        with transaction.atomic():
            channel.save()
    except IntegrityError:
        raise fail(BotsError.BOT_CHANNEL_NAME_TAKEN, name=channel.name) from None


def channel_create(*, assistant: Assistant, kind: Any, name: Any, settings: Any = None, credentials: Any = None,
                   enabled: Any = True) -> BotChannel:
    """A new channel of ``assistant``: its settings and credentials checked, a new random callback id."""
    spec = kind_of(kind)
    if not isinstance(enabled, bool):
        raise fail(BotsError.BOT_CHANNEL_INVALID, "enabled", on_field="enabled")
    clean = clean_settings(spec, settings or {})
    secrets_given = {k: v for k, v in clean_credentials(spec, credentials or {}).items() if v}
    require(kind, clean, secrets_given)
    channel = BotChannel(assistant=assistant, kind=kind, name=_clean_name(name), settings=clean, enabled=enabled,
                         callback_id=secrets.token_urlsafe(24))
    _store_credentials(channel, secrets_given)
    with transaction.atomic():
        _save(channel)
        record(Action.BOT_CHANNEL_CREATE, obj=channel,
               changes=diff({}, {**snapshot(channel, _AUDITED), "kind": channel.kind, "assistant": assistant.pk}))
    return channel


def channel_update(*, channel: BotChannel, name: Any = _UNSET, settings: Any = _UNSET, credentials: Any = _UNSET,
                   enabled: Any = _UNSET) -> BotChannel:
    """Change what is given. ``credentials`` merges: a name given a value replaces it, a name given "" removes it."""
    spec = kind_of(channel.kind)
    before = snapshot(channel, _AUDITED)
    if name is not _UNSET:
        channel.name = _clean_name(name)
    if settings is not _UNSET:
        channel.settings = clean_settings(spec, settings)
    merged = channel_credentials(channel)
    if credentials is not _UNSET:
        merged = {**merged, **clean_credentials(spec, credentials)}
    if enabled is not _UNSET:
        if not isinstance(enabled, bool):
            raise fail(BotsError.BOT_CHANNEL_INVALID, "enabled", on_field="enabled")
        channel.enabled = enabled
    require(channel.kind, channel.settings, {k: v for k, v in merged.items() if v})
    if credentials is not _UNSET:
        _store_credentials(channel, merged)
    with transaction.atomic():
        _save(channel)
        changes = diff(before, snapshot(channel, _AUDITED))
        if credentials is not _UNSET and credentials:
            changes["credentials_changed"] = sorted(credentials)  # which were given, never their values
        record(Action.BOT_CHANNEL_UPDATE, obj=channel, changes=changes)
    return channel


def channel_delete(*, channel: BotChannel) -> None:
    with transaction.atomic():
        record(Action.BOT_CHANNEL_DELETE, obj=channel, changes={"kind": channel.kind, "name": channel.name})
        channel.delete()


def callback_channel(kind: str, callback_id: str) -> BotChannel:
    """The enabled channel a callback URL names (its assistant's owner active); 404 ``bot_channel_not_found``."""
    channel = (BotChannel.objects.select_related("assistant__owner")
               .filter(kind=kind, callback_id=str(callback_id)[:64], enabled=True).first())
    if channel is None or not channel.assistant.owner.is_active:
        raise fail(BotsError.BOT_CHANNEL_NOT_FOUND)
    return channel


# --- what a callback is allowed -------------------------------------------------------------------------------

def channel_throttle(channel: BotChannel) -> None:
    """Count one request to ``channel``'s callback URL in this minute; ``bot_rate_limited`` (429) past
    ``ZHIKU_BOTS_CHANNEL_RATE_LIMIT``.

    Every request counts, refused ones too: a forger's tries are bounded as a platform's events are. The count is
    a fixed one-minute window (``assistants.ratelimit``: Redis when configured, shared by every worker; else this
    process's). The request that first goes over the limit in a window writes the one audit entry of that window,
    so a flood cannot flood the audit log.
    """
    limit = int(settings.ZHIKU_BOTS_CHANNEL_RATE_LIMIT)
    if limit <= 0:
        return
    now = time.time()
    count = minute_count("botrate", channel.pk, int(now // 60))
    if count <= limit:
        return
    retry = max(1, 60 - int(now % 60))
    if count == limit + 1:
        logger.warning("chat-bot channel %s: over %s requests this minute, refused until the next", channel.pk, limit)
        with transaction.atomic():
            record(Action.BOT_CHANNEL_RATE_LIMITED, obj=channel,
                   changes={"kind": channel.kind, "limit": limit, "window_seconds": 60})
    raise fail(BotsError.BOT_RATE_LIMITED, limit=limit, retry=retry, extra={"retry_after": retry})


def signature_once(*, channel: BotChannel, timestamp: int, body: bytes, window: int) -> bool:
    """Whether ``channel`` may take the DingTalk signature of ``timestamp`` (milliseconds) with ``body``: the first
    time, or again with the same body (the platform's retry); False when it came before with another body.

    Call once the signature and the timestamp's window (``window`` seconds) have been checked. The pair is
    remembered in the database (every process sees it, with or without Redis) until its timestamp leaves the
    window; expired pairs are deleted here.
    """
    digest = hashlib.sha256(body).hexdigest()
    now = timezone.now()
    BotSignatureUse.objects.filter(expires_at__lt=now).delete()
    expires = datetime.fromtimestamp(timestamp / 1000 + window + 1, tz=UTC)
    try:
        with transaction.atomic():
            BotSignatureUse.objects.create(channel=channel, timestamp=timestamp, body_digest=digest, expires_at=expires)
        return True
    except IntegrityError:
        return BotSignatureUse.objects.filter(channel=channel, timestamp=timestamp, body_digest=digest).exists()


# --- events ---------------------------------------------------------------------------------------------------

def chat_digest(channel: BotChannel, chat: str) -> str:
    """An opaque, fixed-length name for the platform's chat or user (the conversation's visitor)."""
    return "bot-" + hashlib.sha256(f"{channel.pk}:{chat}".encode()).hexdigest()[:40]


def event_store(*, channel: BotChannel, event_id: str, question: str, chat: str, reply_to: dict[str, Any]) -> BotEvent | None:
    """The new event, or None when this channel already received ``event_id`` (a platform's retry)."""
    try:
        with transaction.atomic():
            return BotEvent.objects.create(
                channel=channel, event_id=event_id[:128], question=question, chat=chat_digest(channel, chat),
                reply_to=secret_encrypt(json.dumps(reply_to, sort_keys=True)))
    except IntegrityError:
        return None


def event_reply_to(event: BotEvent) -> dict[str, Any]:
    try:
        value = json.loads(secret_decrypt(event.reply_to)) if event.reply_to else {}
    except InvalidToken:
        return {}
    return value if isinstance(value, dict) else {}


def events_prune() -> int:
    """Delete events older than ``ZHIKU_BOTS_DEDUP_DAYS`` (with where they would have replied); how many."""
    cutoff = timezone.now() - timedelta(days=max(1, int(settings.ZHIKU_BOTS_DEDUP_DAYS)))
    deleted, _ = BotEvent.objects.filter(created_at__lt=cutoff).delete()
    return deleted
