"""Chat's error codes, in the one registry (core/errors.py); imported by the app's AppConfig.ready."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import NotFound as N
from core.errors import ValidationFailed as V
from core.errors import register as _code

# --- chat ------------------------------------------------------------------------------------------------------
_code("conversation_not_found", N, _("Conversation not found."))
_code("message_not_found", N, _("Message not found."))
_code("invalid_conversation", V, _("conversation must be an id or null."))
_code("invalid_conversation_search", V, _("q must be at most %(limit)s characters."))
_code("invalid_rating", V, _("rating must be up or down."))
_code("invalid_reason_code", V, _("reason_code must be one of %(codes)s, or left out."),
      down_only=_("reason_code wrong_passage goes with a down rating."))
_code("invalid_message", None, _("Send JSON text frames, not binary ones."), status=400)
_code("too_large", None, _("A message may be at most %(limit)s bytes."), status=400,
      closing=_("A message may be at most %(limit)s bytes; this one is larger, so the connection is closed."))
_code("unknown_type", None, _('The message type must be "ask" or "cancel".'), status=400)
_code("nothing_to_cancel", None, _("No answer is streaming."), status=400)
_code("internal_error", None, _("The answer could not be produced."), status=500,
      server=_("The server met an error; try again later."))

# --- the KB health page (chat/health.py) ---------------------------------------------------------------------
_code("invalid_since", V, _("since must be one of %(choices)s (days)."))
_code("invalid_health_question", V, _("question must be a text of 1 to 1000 characters."))
