"""Answer a stored event and send the reply: the job the callback view leaves to ``core.jobs`` (ack first, reply after).

The question is a turn of the channel's assistant as its owner, on the channel's ``chat.Channel``
(``assistants.services.assistant_turn_start``, the same path as the share link, ``/v1`` and MCP): only the KBs the
assistant binds, re-checked now, and counted in its usage. A chat's follow-ups continue its last conversation while
it was used within ``ZHIKU_BOTS_CONVERSATION_IDLE_SECONDS``. An answer that cannot be produced is replied as a short
apology; a reply the platform refuses is kept on the event (``bot_reply_failed``) and logged.
"""
from __future__ import annotations

import logging
from contextlib import aclosing
from datetime import timedelta
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from assistants.services import assistant_turn_start
from bots.errors import BotsError
from bots.formatting import Reply, citations_of
from bots.models import BotEvent, EventStatus
from bots.outbound import ReplyError
from bots.platforms import PLATFORMS
from bots.services import channel_credentials, event_reply_to, events_prune
from chat.models import Conversation
from chat.services import turn_stream
from core import jobs
from core.errors import ApplicationError, stored

logger = logging.getLogger(__name__)

ANSWER_TASK = "bots.answer_event"


def enqueue_answer(event_id: int) -> None:
    """Answer the event once the current transaction commits: a Celery task, the thread worker's reply pool, or now."""
    jobs.after_commit(ANSWER_TASK, answer_event, event_id, what=f"chat-bot event {event_id}",
                      run_here_if_broker_down=True, once=("bot-event", event_id), pool="bots")


def _conversation_id(event: BotEvent) -> int | None:
    since = timezone.now() - timedelta(seconds=settings.ZHIKU_BOTS_CONVERSATION_IDLE_SECONDS)
    return (Conversation.objects.filter(assistant_id=event.channel.assistant_id, visitor=event.chat,
                                        channel=event.channel.kind, updated_at__gte=since)
            .order_by("-updated_at", "-id").values_list("pk", flat=True).first())


async def _finish(turn) -> tuple[dict[str, Any] | None, str]:
    """The turn's ``finish`` event, or (None, the error's message)."""
    async with aclosing(turn_stream(turn)) as events:
        async for event in events:
            if event["type"] == "finish":
                return event, ""
            if event["type"] == "error":
                return None, str(event.get("message") or "")
    return None, ""


def _apology(detail: str = "") -> Reply:
    text = _("Sorry, this question could not be answered just now. Please try again later.")
    return Reply(f"{text}\n{detail}".strip())


def compose(event: BotEvent) -> tuple[Reply, int | None]:
    """The reply to ``event`` and the answer's message id; an apology when the turn cannot start or fails."""
    channel = event.channel
    try:
        turn = assistant_turn_start(assistant=channel.assistant, question=event.question, channel=channel.kind,
                                    visitor=event.chat, conversation_id=_conversation_id(event))
    except ApplicationError as exc:
        logger.warning("chat-bot event %s: the turn did not start: %s", event.pk, exc.code)
        return _apology(exc.message), None
    finish, error = async_to_sync(_finish)(turn)
    if finish is None:
        logger.warning("chat-bot event %s: the answer failed: %s", event.pk, error)
        return _apology(), turn.message_id
    return Reply(finish["answer"], str(finish.get("verdict") or ""), citations_of(finish)), turn.message_id


def answer_event(event_id: int) -> None:
    """Answer and reply to a pending event (any other status: nothing to do, as for a retried job)."""
    updated = BotEvent.objects.filter(pk=event_id, status=EventStatus.PENDING, answered_at__isnull=True)
    if not updated.update(answered_at=timezone.now()):  # claimed once, whichever worker runs it
        return
    event = BotEvent.objects.select_related("channel__assistant__owner").get(pk=event_id)
    channel = event.channel
    with translation.override(settings.LANGUAGE_CODE):
        reply, message_id = compose(event)
        status, error = EventStatus.REPLIED, ""
        try:
            PLATFORMS[channel.kind].send(channel, channel_credentials(channel), event_reply_to(event), reply)
        except (ReplyError, ApplicationError) as exc:
            detail = exc.detail if isinstance(exc, ReplyError) else exc.message
            logger.warning("chat-bot event %s: the reply was not sent: %s", event.pk, detail)
            status, error = EventStatus.FAILED, stored(BotsError.BOT_REPLY_FAILED, detail=detail[:500])
    BotEvent.objects.filter(pk=event.pk).update(status=status, error=error, message_id=message_id,
                                                answered_at=timezone.now())
    events_prune()
