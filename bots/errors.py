"""The chat bots' error codes, registered in the one registry (core/errors.py) when the app loads."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import Conflict, ErrorCode, NotFound, PermissionDenied, Throttled, ValidationFailed, register


class BotsError(ErrorCode):
    """The chat bots' codes: channels, callbacks and replies."""

    BOT_CHANNEL_NOT_FOUND = "bot_channel_not_found"
    BOT_CHANNEL_NAME_TAKEN = "bot_channel_name_taken"
    BOT_CHANNEL_INVALID = "bot_channel_invalid"
    BOT_CREDENTIALS_UNREADABLE = "bot_credentials_unreadable"
    BOT_EVENT_INVALID = "bot_event_invalid"
    BOT_SIGNATURE_INVALID = "bot_signature_invalid"
    BOT_RATE_LIMITED = "bot_rate_limited"
    BOT_REPLY_FAILED = "bot_reply_failed"


# --- channels (bots/services.py, bots/api.py, manage.py channel_create) ------------------------------------------
register(BotsError.BOT_CHANNEL_NOT_FOUND, NotFound, _("Chat-bot channel not found."))
register(BotsError.BOT_CHANNEL_NAME_TAKEN, Conflict, _("This assistant already has a channel named %(name)r."))
register(BotsError.BOT_CHANNEL_INVALID, ValidationFailed, _("A channel needs a kind (feishu, dingtalk or wecom) and a name."),
         kind=_("kind is feishu, dingtalk or wecom."),
         name=_("name must be a non-empty text of at most %(limit)s characters."),
         settings=_("settings must be an object of text values, naming only %(names)s."),
         credentials=_("credentials must be an object of text values, naming only %(names)s."),
         missing=_("A %(kind)s channel needs %(names)s."),
         value=_("%(field)s is not valid: %(rule)s"),
         enabled=_("enabled must be true or false."))
register(BotsError.BOT_CREDENTIALS_UNREADABLE, ValidationFailed,
         _("The channel's stored credentials cannot be decrypted (the secrets key changed); enter them again."))

# --- the callbacks (bots/callback.py) ---------------------------------------------------------------------------
register(BotsError.BOT_EVENT_INVALID, ValidationFailed, _("The callback's request cannot be read: %(detail)s"))
# One refusal, the same words whatever failed (signature, token, timestamp, decryption, parsing): bots/protocol.py.
register(BotsError.BOT_SIGNATURE_INVALID, PermissionDenied, _("The callback could not be verified."))
register(BotsError.BOT_RATE_LIMITED, Throttled,
         _("This channel received more than %(limit)s events this minute; retry in %(retry)s s."))

# --- replies, kept on the event (bots/answering.py) ---------------------------------------------------------------
register(BotsError.BOT_REPLY_FAILED, None, _("The reply could not be sent: %(detail)s"))
