"""What an assistant was used for: conversations, questions, outcomes, ratings and LLM tokens, by channel."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Count, IntegerField, Q, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from assistants.models import Assistant
from chat.models import Conversation, Feedback, Message, Role, Verdict


def assistant_usage(assistant: Assistant, *, since: datetime | None = None) -> dict[str, Any]:
    """Counts over the assistant's conversations (all channels), from ``since`` when given; four queries."""
    conversations = Conversation.objects.filter(assistant=assistant)
    messages = Message.objects.filter(conversation__assistant=assistant)
    feedback = Feedback.objects.filter(message__conversation__assistant=assistant)
    if since is not None:
        conversations = conversations.filter(created_at__gte=since)
        messages = messages.filter(created_at__gte=since)
        feedback = feedback.filter(created_at__gte=since)
    by_channel = dict(conversations.values_list("channel").annotate(n=Count("id")).values_list("channel", "n"))
    answers = messages.filter(role=Role.ASSISTANT).aggregate(
        questions=Count("id"),
        answered=Count("id", filter=Q(verdict=Verdict.ANSWERED)),
        uncertain=Count("id", filter=Q(verdict=Verdict.UNCERTAIN)),
        not_found=Count("id", filter=Q(verdict=Verdict.NOT_FOUND)),
        failed=Count("id", filter=Q(status__in=["error", "cancelled"])),
        prompt_tokens=Sum(Cast(KT("timings__usage__prompt_tokens"), IntegerField())),
        completion_tokens=Sum(Cast(KT("timings__usage__completion_tokens"), IntegerField())),
    )
    ratings = feedback.aggregate(up=Count("id", filter=Q(rating="up")), down=Count("id", filter=Q(rating="down")))
    return {
        "conversations": sum(by_channel.values()), "conversations_by_channel": by_channel,
        "questions": answers["questions"],
        "outcomes": {k: answers[k] for k in ("answered", "uncertain", "not_found", "failed")},
        "feedback": ratings,
        "tokens": {"prompt": answers["prompt_tokens"] or 0, "completion": answers["completion_tokens"] or 0},
    }
