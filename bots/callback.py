"""What a platform's callback does (``/bots/<kind>/<callback_id>/``, bots/views.py), and the self-test's too.

Acknowledge first, reply after: a callback is counted against its channel's rate, checked (its platform's
signature or token, its timestamp's window), a question is stored once per platform event id (``BotEvent``; a
retried event is acknowledged and not answered again) and answered later (bots/answering.py, through
``core.jobs``), so the platform's ~3 s timeout is never reached. Refusals are JSON ``{"error": {"code",
"message"}}`` with the code's status: 404 for an unknown or disabled channel, 429 ``bot_rate_limited`` past
``ZHIKU_BOTS_CHANNEL_RATE_LIMIT`` (with ``retry_after`` and Retry-After), 403 ``bot_signature_invalid`` for any
check that fails (one answer for all of them, bots/protocol.py), 400 for a method no platform uses, 413 for a body
over ``MAX_BODY_BYTES`` (also refused as it arrives, config/body_limits.py). The checks are the channel's platform's
(``Platform.receive``, bots/platforms/).
"""
from __future__ import annotations

import logging
from functools import partial

from django.http import HttpRequest, HttpResponse, JsonResponse

from bots.answering import enqueue_answer
from bots.models import BotChannel
from bots.platforms import PLATFORMS
from bots.platforms.base import Callback
from bots.services import callback_channel, channel_credentials, channel_throttle, event_store, signature_once
from core.errors import ApplicationError, CoreError, fail

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024
"""A platform's event is a few kilobytes (a message of up to a few thousand characters, its envelope)."""


def _error(exc: ApplicationError) -> JsonResponse:
    """The callback's error shape: code and message only (never ``extra["reason"]``), and the wait of a 429."""
    error: dict[str, object] = {"code": exc.code, "message": exc.message}
    retry = exc.extra.get("retry_after")
    if retry is not None:
        error["retry_after"] = retry
    response = JsonResponse({"error": error}, status=exc.status_code, json_dumps_params={"ensure_ascii": False})
    if retry is not None:
        response["Retry-After"] = str(retry)
    return response


def _signature_once(channel: BotChannel, timestamp: int, body: bytes, window: int) -> bool:
    return signature_once(channel=channel, timestamp=timestamp, body=body, window=window)


def respond(request: HttpRequest, kind: str, callback_id: str) -> tuple[HttpResponse, str]:
    """Check, store and acknowledge one callback (``kind`` is a registered platform's, bots/views.py); with
    a refusal, why it was refused (for the log and the channel's self-test, bots/selftest.py; never answered)."""
    channel: BotChannel | None = None
    try:
        declared = request.META.get("CONTENT_LENGTH") or "0"
        if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            raise fail(CoreError.BODY_TOO_LARGE, "stream", limit=MAX_BODY_BYTES)
        channel = callback_channel(kind, callback_id)
        channel_throttle(channel)
        once = partial(_signature_once, channel)
        outcome = PLATFORMS[kind].receive(Callback(channel, channel_credentials(channel), request, MAX_BODY_BYTES, once))
    except ApplicationError as exc:
        reason = str(exc.extra.get("reason") or exc.message)
        if exc.code == "bot_signature_invalid" and channel is not None:
            logger.warning("chat-bot channel %s (%s): a callback refused: %s", channel.pk, kind, reason)
        return _error(exc), reason
    incoming = outcome.incoming
    if incoming is not None:
        event = event_store(channel=channel, event_id=incoming.event_id, question=incoming.question,
                            chat=incoming.chat, reply_to=incoming.reply_to)
        if event is None:
            logger.info("chat-bot channel %s: event %s again (a retry): acknowledged, not answered", channel.pk,
                        incoming.event_id)
        else:
            enqueue_answer(event.pk)
    return outcome.response, ""


def handle(request: HttpRequest, kind: str, callback_id: str) -> HttpResponse:
    return respond(request, kind, callback_id)[0]
