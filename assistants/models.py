"""Assistants (应用): a named, owned binding of KBs and answer settings, and the API keys that reach them.

An assistant reaches only what its owner may read *now*: its KBs are re-checked against the owner's
access at every request (``assistants.services.assistant_kbs``), so a KB the owner loses is gone from
the assistant too. Keys are stored as their SHA-256 digest; the key itself is shown once.
"""
from __future__ import annotations

from typing import cast

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _


class ShareAccess(models.TextChoices):
    OFF = "off", _("off")
    PUBLIC = "public", _("anyone with the link")
    MEMBERS = "members", _("signed-in members only")


class Assistant(models.Model):
    """A published way to ask a set of KBs: its KBs in order, how it answers, where it may be embedded."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("owner"), on_delete=models.CASCADE,
                              related_name="assistants")
    name = models.CharField(verbose_name=_("name"), max_length=100)
    description = models.TextField(verbose_name=_("description"), blank=True, default="")
    kbs = models.ManyToManyField("knowledge.KnowledgeBase", through="AssistantKB", verbose_name=_("knowledge bases"),
                                 related_name="assistants")
    system_prompt = models.TextField(verbose_name=_("system prompt"), blank=True, default="")
    model = models.CharField(verbose_name=_("model"), max_length=200, blank=True, default="",
                             help_text=_("A configured model; blank for the site's default"))
    top_k = models.PositiveSmallIntegerField(verbose_name=_("top k"), null=True, blank=True,
                                             help_text=_("Blank: each knowledge base's own"))
    score_threshold = models.FloatField(verbose_name=_("not-found gate"), null=True, blank=True,
                                        help_text=_("Blank: each knowledge base's own"))
    answer_threshold = models.FloatField(verbose_name=_("confidence line"), null=True, blank=True,
                                         help_text=_("Blank: each knowledge base's own"))
    not_found_text = models.TextField(verbose_name=_("not-found text"), blank=True, default="",
                                      help_text=_("Blank: the first knowledge base's"))
    opening_message = models.TextField(verbose_name=_("opening message"), blank=True, default="")
    suggested_questions = models.JSONField(verbose_name=_("suggested questions"), default=list, blank=True)
    allowed_origins = models.JSONField(verbose_name=_("allowed origins"), default=list, blank=True,
                                       help_text=_("Sites that may embed the chat, e.g. https://intranet.example.com"))
    share_access = models.CharField(verbose_name=_("share link"), max_length=10, choices=ShareAccess.choices,
                                    default=ShareAccess.OFF)
    share_token = models.CharField(verbose_name=_("share token"), max_length=64, unique=True, null=True, blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("assistant")
        verbose_name_plural = _("assistants")
        ordering = ["-updated_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="assistant_name_per_owner"),
            models.CheckConstraint(condition=Q(score_threshold__isnull=True) | (Q(score_threshold__gte=0) & Q(score_threshold__lte=1)),
                                   name="assistant_threshold_range"),
            models.CheckConstraint(condition=Q(answer_threshold__isnull=True) | (Q(answer_threshold__gte=0) & Q(answer_threshold__lte=1)),
                                   name="assistant_answer_threshold_range"),
            models.CheckConstraint(condition=Q(share_access__in=["off", "public", "members"]), name="assistant_share_access_valid"),
        ]

    def __str__(self) -> str:
        return self.name

    def kb_ids(self) -> list[int]:
        """The assistant's KB ids in their order (the first KB's settings lead, as in a multi-KB chat)."""
        return list(self.kb_links.order_by("position", "id").values_list("kb_id", flat=True))


class AssistantKB(models.Model):
    assistant = models.ForeignKey(Assistant, on_delete=models.CASCADE, related_name="kb_links")
    kb = models.ForeignKey("knowledge.KnowledgeBase", on_delete=models.CASCADE, related_name="assistant_links")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]
        constraints = [models.UniqueConstraint(fields=["assistant", "kb"], name="assistant_kb_once")]


class KeyKind(models.TextChoices):
    ASSISTANT = "assistant", _("assistant")
    """Asks the assistant (OpenAI-compatible chat, MCP) and searches its KBs."""
    KB = "kb", _("knowledge base")
    """Read-only retrieval from one KB (MCP search, Dify's external knowledge)."""


class ApiKey(models.Model):
    """A key of one assistant or of one KB; ``digest`` is the SHA-256 of the key, which is never stored."""

    kind = models.CharField(verbose_name=_("kind"), max_length=10, choices=KeyKind.choices)
    assistant = models.ForeignKey(Assistant, verbose_name=_("assistant"), on_delete=models.CASCADE, null=True, blank=True,
                                  related_name="keys")
    kb = models.ForeignKey("knowledge.KnowledgeBase", verbose_name=_("knowledge base"), on_delete=models.CASCADE,
                           null=True, blank=True, related_name="api_keys")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("created by"), on_delete=models.CASCADE,
                                   related_name="assistant_keys")
    name = models.CharField(verbose_name=_("name"), max_length=100, blank=True, default="")
    prefix = models.CharField(verbose_name=_("prefix"), max_length=16, help_text=_("The key's first characters, to tell keys apart"))
    digest = models.CharField(verbose_name=_("digest"), max_length=64, unique=True)
    rate_limit = models.PositiveIntegerField(verbose_name=_("requests per minute"), null=True, blank=True,
                                             help_text=_("Blank: the site's ZHIKU_KEY_RATE_LIMIT"))
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    last_used_at = models.DateTimeField(verbose_name=_("last used"), null=True, blank=True)
    revoked_at = models.DateTimeField(verbose_name=_("revoked at"), null=True, blank=True)

    class Meta:
        verbose_name = _("API key")
        verbose_name_plural = _("API keys")
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(kind="assistant", assistant__isnull=False, kb__isnull=True)
                           | Q(kind="kb", kb__isnull=False, assistant__isnull=True)),
                name="apikey_one_target"),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.kind})"

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    @property
    def target_assistant(self) -> Assistant:
        """The assistant of an assistant key (``apikey_one_target``: a key of that kind always has one)."""
        return cast(Assistant, self.assistant)
