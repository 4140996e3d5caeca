"""One's own conversations: renamed and deleted by their owner only (read through chat/selectors.py, searched there)."""
from __future__ import annotations

from typing import Any

from chat import selectors
from chat.models import Conversation

TITLE_MAX_CHARS = 200  # Conversation.title's column


def conversation_rename(*, user, conversation_id: Any, title: str) -> Conversation:
    """Give the user's conversation a new title (NotFound ``conversation_not_found`` for anyone else's). The caller
    checked the title (non-blank, at most ``TITLE_MAX_CHARS``). A rename is not activity: the conversation keeps its
    place in the list (``updated_at`` is left as it was)."""
    conversation = selectors.conversation_get(user=user, conversation_id=conversation_id)
    Conversation.objects.filter(pk=conversation.pk).update(title=title)
    conversation.title = title
    return conversation


def conversation_delete(*, user, conversation_id: Any) -> None:
    """Delete the user's conversation with its messages and feedback (NotFound for anyone else's)."""
    conversation = selectors.conversation_get(user=user, conversation_id=conversation_id)
    conversation.delete()
