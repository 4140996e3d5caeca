"""Chat-bot channels: an assistant answering in a Feishu, DingTalk or WeCom chat, and the events each one received.

A channel's callback URL is ``/bots/<kind>/<callback_id>/``: the id is random and unguessable, and every request
to it is also checked with the platform's own signature (bots/platforms/: one module a platform). The
platform's secrets are stored encrypted (``providers.secrets``), never returned; ``settings`` holds what is not
secret (app id, corp id, agent id). ``BotEvent`` keeps each event's platform id once, so a retried event is
answered once; rows older than ``ZHIKU_BOTS_DEDUP_DAYS`` are pruned. ``BotSignatureUse`` keeps the DingTalk
signatures a channel took, so one cannot be replayed with another body.
"""
from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from bots.platforms import PLATFORMS

# The kinds are the registry's (bots/platforms/__init__.py): a platform added there is a kind here, and its
# database check follows with a migration. django-stubs types the functional API only with one label, not a list.
BotKind = models.TextChoices(  # type: ignore[call-overload]
    "BotKind", [(name.upper(), (name, p.label)) for name, p in PLATFORMS.items()])


class BotChannel(models.Model):
    assistant = models.ForeignKey("assistants.Assistant", verbose_name=_("assistant"), on_delete=models.CASCADE,
                                  related_name="bot_channels")
    kind = models.CharField(verbose_name=_("kind"), max_length=10, choices=BotKind.choices)
    name = models.CharField(verbose_name=_("name"), max_length=100)
    settings = models.JSONField(verbose_name=_("settings"), default=dict, blank=True,
                                help_text=_("What is not secret: app id, corp id, agent id"))
    credentials = models.TextField(verbose_name=_("credentials (encrypted)"), blank=True, default="", editable=False,
                                   help_text=_("A Fernet token of the secrets as JSON; empty when none are stored."))
    credential_names = models.JSONField(verbose_name=_("stored credentials"), default=list, blank=True, editable=False)
    enabled = models.BooleanField(verbose_name=_("enabled"), default=True)
    callback_id = models.CharField(verbose_name=_("callback id"), max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("bot channel")
        verbose_name_plural = _("bot channels")
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["assistant", "name"], name="bot_channel_name_per_assistant"),
            models.CheckConstraint(condition=Q(kind__in=list(PLATFORMS)), name="bot_channel_kind_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"

    @property
    def callback_url(self) -> str:
        """The path on this site the platform is given (docs/integrations.md)."""
        return f"/bots/{self.kind}/{self.callback_id}/"


class EventStatus(models.TextChoices):
    PENDING = "pending", _("pending")
    REPLIED = "replied", _("replied")
    FAILED = "failed", _("failed")


class BotEvent(models.Model):
    """One message a channel received: its platform id (unique per channel), where to reply, how it went."""

    channel = models.ForeignKey(BotChannel, verbose_name=_("channel"), on_delete=models.CASCADE, related_name="events")
    event_id = models.CharField(verbose_name=_("event id"), max_length=128)
    question = models.TextField(verbose_name=_("question"), blank=True, default="")
    chat = models.CharField(verbose_name=_("chat"), max_length=64, blank=True, default="",
                            help_text=_("A digest of the platform's chat or user: its conversation"))
    reply_to = models.TextField(verbose_name=_("reply to (encrypted)"), blank=True, default="", editable=False,
                                help_text=_("Where the reply goes (a message id, a user, a session webhook), encrypted"))
    status = models.CharField(verbose_name=_("status"), max_length=10, choices=EventStatus.choices,
                              default=EventStatus.PENDING)
    error = models.TextField(verbose_name=_("error"), blank=True, default="")
    message = models.ForeignKey("chat.Message", verbose_name=_("answer"), on_delete=models.SET_NULL, null=True,
                                blank=True, related_name="+")
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True, db_index=True)
    answered_at = models.DateTimeField(verbose_name=_("answered at"), null=True, blank=True)

    class Meta:
        verbose_name = _("bot event")
        verbose_name_plural = _("bot events")
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["channel", "event_id"], name="bot_event_once"),
            models.CheckConstraint(condition=Q(status__in=["pending", "replied", "failed"]), name="bot_event_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.channel_id}:{self.event_id}"


class BotSignatureUse(models.Model):
    """A DingTalk (timestamp, sign) pair a channel took, and the digest of the body it came with.

    DingTalk's ``sign`` covers the timestamp alone (bots/platforms/dingtalk.py), so a captured pair would carry any body while
    its timestamp is in the window: a pair is taken with its first body only (the same body again is the platform's
    retry, answered once by ``BotEvent``). Kept until the timestamp leaves the window (``expires_at``), then pruned.
    """

    channel = models.ForeignKey(BotChannel, verbose_name=_("channel"), on_delete=models.CASCADE, related_name="+")
    timestamp = models.BigIntegerField(verbose_name=_("timestamp (ms)"))
    body_digest = models.CharField(verbose_name=_("body digest"), max_length=64)
    expires_at = models.DateTimeField(verbose_name=_("expires at"), db_index=True)

    class Meta:
        verbose_name = _("used signature")
        verbose_name_plural = _("used signatures")
        constraints = [models.UniqueConstraint(fields=["channel", "timestamp"], name="bot_signature_once")]

    def __str__(self) -> str:
        return f"{self.channel_id}:{self.timestamp}"
