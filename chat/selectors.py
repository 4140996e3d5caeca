"""Reads of conversations and messages, always scoped to their owner."""
from __future__ import annotations

from django.db.models import Count, Exists, OuterRef, Prefetch, Q, QuerySet

from chat.errors import ChatError
from chat.models import Conversation, Feedback, Message, Role
from core.errors import fail


def conversation_list(*, user, q: str = "") -> QuerySet[Conversation]:
    """The user's own conversations (not their assistants'), most recently active first, with their message counts.

    ``q``: only those whose title or any message (a question or an answer) holds it, case-insensitively; blank: all.
    """
    qs = Conversation.objects.filter(user=user, assistant__isnull=True)
    if q:
        said = Message.objects.filter(conversation=OuterRef("pk"), content__icontains=q)
        qs = qs.filter(Q(title__icontains=q) | Exists(said))
    return qs.annotate(message_count=Count("messages")).order_by("-updated_at", "-id")


def conversation_get(*, user, conversation_id) -> Conversation:
    """The user's conversation; anyone else's (or a missing one) is NotFound ``conversation_not_found``."""
    try:
        return Conversation.objects.get(pk=int(conversation_id), user=user, assistant__isnull=True)
    except (Conversation.DoesNotExist, TypeError, ValueError):
        raise fail(ChatError.CONVERSATION_NOT_FOUND) from None


def conversation_messages(*, user, conversation: Conversation) -> QuerySet[Message]:
    """The conversation's messages in order, each with the user's own feedback prefetched (``my_feedback``)."""
    mine = Feedback.objects.filter(user=user)
    return conversation.messages.order_by("id").prefetch_related(Prefetch("feedback", queryset=mine, to_attr="my_feedback"))


def conversation_history(*, conversation: Conversation, before_id: int | None = None, turns: int = 3) -> list[Message]:
    """The last ``turns`` question/answer pairs before ``before_id`` (oldest first), for rewriting and prompts."""
    qs = conversation.messages.order_by("-id")
    if before_id is not None:
        qs = qs.filter(id__lt=before_id)
    return list(reversed(qs[: 2 * turns]))


def answer_get(*, user, message_id) -> Message:
    """An assistant message in one of the user's conversations, else NotFound ``message_not_found``."""
    try:
        return Message.objects.select_related("conversation").get(
            pk=int(message_id), conversation__user=user, conversation__assistant__isnull=True, role=Role.ASSISTANT,
        )
    except (Message.DoesNotExist, TypeError, ValueError):
        raise fail(ChatError.MESSAGE_NOT_FOUND) from None
