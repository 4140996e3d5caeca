"""Chat's error codes, in the one registry (core/errors.py); imported by the app's AppConfig.ready."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import ErrorCode
from core.errors import NotFound as N
from core.errors import ValidationFailed as V
from core.errors import register as _code


class ChatError(ErrorCode):
    """Chat's codes: conversations, the socket, evaluation runs, the health page."""

    CONVERSATION_NOT_FOUND = "conversation_not_found"
    MESSAGE_NOT_FOUND = "message_not_found"
    INVALID_CONVERSATION = "invalid_conversation"
    INVALID_CONVERSATION_SEARCH = "invalid_conversation_search"
    INVALID_RATING = "invalid_rating"
    INVALID_REASON_CODE = "invalid_reason_code"
    INVALID_MESSAGE = "invalid_message"
    TOO_LARGE = "too_large"
    UNKNOWN_TYPE = "unknown_type"
    NOTHING_TO_CANCEL = "nothing_to_cancel"
    INTERNAL_ERROR = "internal_error"
    TOO_MANY_QUESTIONS = "too_many_questions"
    QUESTION_NOT_FOUND = "question_not_found"
    NO_QUESTIONS = "no_questions"
    INVALID_SINCE = "invalid_since"
    INVALID_HEALTH_QUESTION = "invalid_health_question"


# --- chat ------------------------------------------------------------------------------------------------------
_code(ChatError.CONVERSATION_NOT_FOUND, N, _("Conversation not found."))
_code(ChatError.MESSAGE_NOT_FOUND, N, _("Message not found."))
_code(ChatError.INVALID_CONVERSATION, V, _("conversation must be an id or null."))
_code(ChatError.INVALID_CONVERSATION_SEARCH, V, _("q must be at most %(limit)s characters."))
_code(ChatError.INVALID_RATING, V, _("rating must be up or down."))
_code(ChatError.INVALID_REASON_CODE, V, _("reason_code must be one of %(codes)s, or left out."),
      down_only=_("reason_code wrong_passage goes with a down rating."))
_code(ChatError.INVALID_MESSAGE, None, _("Send JSON text frames, not binary ones."), status=400)
_code(ChatError.TOO_LARGE, None, _("A message may be at most %(limit)s bytes."), status=400,
      closing=_("A message may be at most %(limit)s bytes; this one is larger, so the connection is closed."))
_code(ChatError.UNKNOWN_TYPE, None, _('The message type must be "ask" or "cancel".'), status=400)
_code(ChatError.NOTHING_TO_CANCEL, None, _("No answer is streaming."), status=400)
_code(ChatError.INTERNAL_ERROR, None, _("The answer could not be produced."), status=500,
      server=_("The server met an error; try again later."))

# --- evaluation runs of a KB's labelled questions (chat/evaluation_api.py) ------------------------------------
_code(ChatError.TOO_MANY_QUESTIONS, V, _("A KB holds at most %(limit)s labelled questions."))
_code(ChatError.QUESTION_NOT_FOUND, N, _("Question not found."))
_code(ChatError.NO_QUESTIONS, V, _("Add labelled questions first (POST .../eval-questions/)."))

# --- the KB health page (chat/health.py) ---------------------------------------------------------------------
_code(ChatError.INVALID_SINCE, V, _("since must be one of %(choices)s (days)."))
_code(ChatError.INVALID_HEALTH_QUESTION, V, _("question must be a text of 1 to 1000 characters."))
