"""Votes that teach: a 👍, or a 👎 「wrong passage」, on a chat answer becomes a labelled question of the cited KB.

The question is the standalone query the turn searched with (its rewrite, else the user's text); the passage is the
answer's first cited chunk, in its own KB (one of those the turn searched, one the voter can still read). A voter who
edits that KB makes a confirmed label at once; a plain viewer's waits in the KB's review queue (pending) until an
editor or owner confirms it (knowledge/services/labels.py). A vote that no longer teaches (👎 for another reason)
withdraws the voter's label of that answer. Nothing is learnt from a KB that has not opted in
(``KnowledgeBase.learn_from_feedback``): the label is still stored, for evaluation and calibration.
"""
from __future__ import annotations

from typing import Any

from django.db import transaction

from chat.errors import ChatError
from chat.models import Feedback, Message, Rating, Role
from chat.services import feedback_give
from core.errors import fail
from knowledge.access import kb_role, role_at_least
from knowledge.models import EvalQuestion, KnowledgeBase
from knowledge.models import Role as KBRole
from knowledge.services.labels import label_from_vote, label_withdraw_vote

WRONG_PASSAGE = "wrong_passage"
REASON_CODES = (WRONG_PASSAGE,)


def feedback_record(*, user, message_id: Any, rating: str, reason: str = "",
                    reason_code: str = "") -> tuple[Feedback, EvalQuestion | None]:
    """Rate an answer (``feedback_give``) and turn the vote into a label where it teaches; returns both."""
    if reason_code and reason_code not in REASON_CODES:
        raise fail(ChatError.INVALID_REASON_CODE, codes=", ".join(REASON_CODES))
    if reason_code == WRONG_PASSAGE and rating != Rating.DOWN:
        raise fail(ChatError.INVALID_REASON_CODE, "down_only")
    with transaction.atomic():
        feedback = feedback_give(user=user, message_id=message_id, rating=rating, reason=reason)
        if feedback.reason_code != reason_code:
            feedback.reason_code = reason_code
            feedback.save(update_fields=["reason_code", "updated_at"])
        return feedback, _teach(feedback)


def _teach(feedback: Feedback) -> EvalQuestion | None:
    message = feedback.message
    wrong = feedback.rating == Rating.DOWN and feedback.reason_code == WRONG_PASSAGE
    cited = _first_cited(message) if feedback.rating == Rating.UP or wrong else None
    role = kb_role(user=feedback.user, kb=cited[0]) if cited else None
    if cited is None or role is None:
        label_withdraw_vote(user=feedback.user, message_id=message.pk)
        return None
    kb, chunk_id = cited
    return label_from_vote(user=feedback.user, kb=kb, question=_question(message), message_id=message.pk,
                           chunk_id=chunk_id, wrong=wrong, trusted=role_at_least(role, KBRole.EDITOR))


def _first_cited(message: Message) -> tuple[KnowledgeBase, int] | None:
    """The answer's first cited chunk of a KB its question searched, with that KB."""
    for citation in message.citations or []:
        if not isinstance(citation, dict):
            continue
        kb_id, chunk_id = citation.get("kb_id"), citation.get("chunk_id")
        if isinstance(kb_id, int) and isinstance(chunk_id, int) and kb_id in (message.kb_ids or []):
            kb = KnowledgeBase.objects.filter(pk=kb_id).first()
            return (kb, chunk_id) if kb is not None else None
    return None


def _question(message: Message) -> str:
    """The standalone query the turn searched with: the rewrite of the user message before the answer, else its text."""
    asked = (Message.objects.filter(conversation_id=message.conversation_id, role=Role.USER, id__lt=message.pk)
             .order_by("-id").values("rewritten_query", "content").first())
    return (asked["rewritten_query"] or asked["content"]) if asked else ""
