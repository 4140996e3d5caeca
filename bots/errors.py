"""The chat bots' error codes, registered in the one registry (core/errors.py) when the app loads."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import Conflict, NotFound, PermissionDenied, Throttled, ValidationFailed, register

# --- channels (bots/services.py, bots/api.py, manage.py channel_create) ------------------------------------------
register("bot_channel_not_found", NotFound, _("Chat-bot channel not found."))
register("bot_channel_name_taken", Conflict, _("This assistant already has a channel named %(name)r."))
register("bot_channel_invalid", ValidationFailed, _("A channel needs a kind (feishu, dingtalk or wecom) and a name."),
         kind=_("kind is feishu, dingtalk or wecom."),
         name=_("name must be a non-empty text of at most %(limit)s characters."),
         settings=_("settings must be an object of text values, naming only %(names)s."),
         credentials=_("credentials must be an object of text values, naming only %(names)s."),
         missing=_("A %(kind)s channel needs %(names)s."),
         value=_("%(field)s is not valid: %(rule)s"),
         enabled=_("enabled must be true or false."))
register("bot_credentials_unreadable", ValidationFailed,
         _("The channel's stored credentials cannot be decrypted (the secrets key changed); enter them again."))

# --- the callbacks (bots/callback.py) ---------------------------------------------------------------------------
register("bot_event_invalid", ValidationFailed, _("The callback's request cannot be read: %(detail)s"))
# One refusal, the same words whatever failed (signature, token, timestamp, decryption, parsing): bots/protocol.py.
register("bot_signature_invalid", PermissionDenied, _("The callback could not be verified."))
register("bot_rate_limited", Throttled,
         _("This channel received more than %(limit)s events this minute; retry in %(retry)s s."))

# --- replies, kept on the event (bots/answering.py) ---------------------------------------------------------------
register("bot_reply_failed", None, _("The reply could not be sent: %(detail)s"))
