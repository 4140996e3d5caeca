"""The audit log's vocabulary: the actions it records and where they came from (no model imports)."""
from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class Action(models.TextChoices):
    """The fixed vocabulary of recorded actions (``<object>.<verb>``)."""

    SIGN_IN = "auth.sign_in", _("Signed in")
    SIGN_IN_FAILED = "auth.sign_in_failed", _("Failed sign-in")
    SIGN_OUT = "auth.sign_out", _("Signed out")
    TOKEN_CREATE = "token.create", _("API token created")
    TOKEN_REVOKE = "token.revoke", _("API token revoked")
    KEY_CREATE = "key.create", _("API key created")
    KEY_REVOKE = "key.revoke", _("API key revoked")
    KB_CREATE = "kb.create", _("Knowledge base created")
    KB_UPDATE = "kb.update", _("Knowledge base settings changed")
    KB_DELETE = "kb.delete", _("Knowledge base deleted")
    MEMBERSHIP_ADD = "membership.add", _("Member added")
    MEMBERSHIP_CHANGE = "membership.change", _("Member's role changed")
    MEMBERSHIP_REMOVE = "membership.remove", _("Member removed")
    GROUP_CREATE = "group.create", _("Group created")
    GROUP_UPDATE = "group.update", _("Group renamed")
    GROUP_DELETE = "group.delete", _("Group deleted")
    GROUP_MEMBER_ADD = "group.member_add", _("Added to a group")
    GROUP_MEMBER_REMOVE = "group.member_remove", _("Removed from a group")
    DOCUMENT_UPLOAD = "document.upload", _("Document uploaded")
    DOCUMENT_REPLACE = "document.replace", _("New version uploaded")
    DOCUMENT_DELETE = "document.delete", _("Document deleted")
    DOCUMENT_REINDEX = "document.reindex", _("Document re-indexed")
    DOCUMENT_RETRY = "document.retry", _("Document ingestion retried")
    DOCUMENT_RESTRICT = "document.restrict", _("Document restriction changed")
    DOCUMENT_VERSION_RESTORE = "document.version_restore", _("Document version restored")
    CHUNK_CREATE = "chunk.create", _("Chunk added")
    CHUNK_EDIT = "chunk.edit", _("Chunk edited")
    LABEL_CREATE = "label.create", _("Labelled question added")
    LABEL_CONFIRM = "label.confirm", _("Labelled question confirmed")
    LABEL_REJECT = "label.reject", _("Labelled question rejected")
    LABEL_DELETE = "label.delete", _("Labelled question withdrawn")
    ASSISTANT_CREATE = "assistant.create", _("Assistant created")
    ASSISTANT_UPDATE = "assistant.update", _("Assistant changed")
    ASSISTANT_DELETE = "assistant.delete", _("Assistant deleted")
    ASSISTANT_SHARE_ROTATE = "assistant.share_rotate", _("Share link renewed")
    ENDPOINT_CREATE = "model_endpoint.create", _("Model endpoint added")
    ENDPOINT_UPDATE = "model_endpoint.update", _("Model endpoint changed")
    ENDPOINT_DELETE = "model_endpoint.delete", _("Model endpoint deleted")
    DEFAULT_MODEL_SET = "model_endpoint.default", _("Default model chosen")
    USER_CREATE = "user.create", _("Account created")
    USER_UPDATE = "user.update", _("Account flags changed")
    USER_DELETE = "user.delete", _("Account deleted")
    USER_PASSWORD_SET = "user.password_set", _("Password set by an administrator")
    USER_RESET_LINK = "user.reset_link", _("Password reset link issued")
    GROUP_MANAGER_ADD = "group.manager_add", _("Group manager added")
    GROUP_MANAGER_REMOVE = "group.manager_remove", _("Group manager removed")
    INVITATION_CREATE = "invitation.create", _("Invitation created")
    INVITATION_ACCEPT = "invitation.accept", _("Invitation accepted")
    INVITATION_REVOKE = "invitation.revoke", _("Invitation revoked")
    SOURCE_CREATE = "source.create", _("Source added")
    SOURCE_UPDATE = "source.update", _("Source changed")
    SOURCE_DELETE = "source.delete", _("Source removed")
    SOURCE_RUN = "source.run", _("Source run started")
    SOURCE_RUN_CANCEL = "source.run_cancel", _("Source run cancelled")
    BOT_CHANNEL_CREATE = "bot_channel.create", _("Chat-bot channel added")
    BOT_CHANNEL_UPDATE = "bot_channel.update", _("Chat-bot channel changed")
    BOT_CHANNEL_DELETE = "bot_channel.delete", _("Chat-bot channel removed")
    BOT_CHANNEL_RATE_LIMITED = "bot_channel.rate_limited", _("Chat-bot channel over its event rate")
    GOLDEN_DROP = "kb.golden_drop", _("Golden questions' answer rate fell")
    AUDIT_PURGE = "audit.purge", _("Old audit entries purged")


class Origin(models.TextChoices):
    """Where the action came from: a web or API request, a management command, or the platform itself."""

    WEB = "web", _("web or API")
    CLI = "cli", _("command line")
    SYSTEM = "system", _("system")
