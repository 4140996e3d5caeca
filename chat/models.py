"""Conversations, messages and feedback."""
from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy


class Channel(models.TextChoices):
    """Where a conversation was asked."""

    CONSOLE = "console", _("console")
    API = "api", _("OpenAI-compatible API")
    MCP = "mcp", _("MCP")
    EMBED = "embed", _("embedded chat")
    SHARE = "share", _("share link")
    TRY = "try", _("assistant preview")
    FEISHU = "feishu", _("Feishu")
    DINGTALK = "dingtalk", _("DingTalk")
    WECOM = "wecom", _("WeCom")


class Conversation(models.Model):
    """A user's chat over one or more knowledge bases; only its owner may read it."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE,
                             related_name="conversations")
    title = models.CharField(verbose_name=_("title"), max_length=200, blank=True, default="")
    kb_ids = models.JSONField(verbose_name=_("knowledge bases"), default=list, blank=True,
                              help_text=_("The KBs the last question searched"))
    # A conversation with an assistant (assistants/) belongs to the assistant's owner, who answers for what it
    # reads; ``channel`` says where it was asked and ``visitor`` tells a share link's or an embed's visitors apart.
    assistant = models.ForeignKey("assistants.Assistant", verbose_name=_("assistant"), on_delete=models.CASCADE,
                                  null=True, blank=True, related_name="conversations")
    channel = models.CharField(verbose_name=_("channel"), max_length=10, choices=Channel.choices, default=Channel.CONSOLE)
    visitor = models.CharField(verbose_name=_("visitor"), max_length=64, blank=True, default="",
                               help_text=_("A share link's or embed's visitor (an opaque id); blank otherwise"))
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("conversation")
        verbose_name_plural = _("conversations")
        ordering = ["-updated_at", "-id"]
        indexes = [models.Index(fields=["user", "-updated_at"], name="conversation_user_recent"),
                   models.Index(fields=["assistant", "visitor", "-updated_at"], name="conversation_assistant_recent")]

    def __str__(self) -> str:
        return self.title or f"conversation {self.pk}"


class Role(models.TextChoices):
    USER = "user", _("user")
    ASSISTANT = "assistant", pgettext_lazy("message role", "assistant")  # not the assistant of assistants/: 助手, not 应用


class MessageStatus(models.TextChoices):
    COMPLETE = "complete", _("complete")
    INCOMPLETE = "incomplete", _("incomplete")
    """Still streaming, or the stream broke: the content is the partial answer."""
    CANCELLED = "cancelled", _("cancelled")
    ERROR = "error", _("error")


class NotFoundBy(models.TextChoices):
    RETRIEVAL = "retrieval", _("retrieval")
    """Relevance was below the KB's not-found gate; no LLM was called."""
    LLM = "llm", _("llm")
    """Retrieval passed the gate, but the LLM replied that the sources do not hold the answer."""


class Verdict(models.TextChoices):
    """A turn's graded verdict (``knowledge.retrieval.judge``): how sure the answer is."""

    ANSWERED = "answered", _("answered")
    """The evidence holds the answer."""
    UNCERTAIN = "uncertain", _("uncertain")
    """The best evidence found, shown with a plain statement that it may not answer the question."""
    NOT_FOUND = "not_found", _("not found")
    """Nothing relevant: the KB's not-found text."""


class Message(models.Model):
    """One turn. An assistant message is created ``incomplete`` when its answer starts and settled when it ends."""

    conversation = models.ForeignKey(Conversation, verbose_name=_("conversation"), on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(verbose_name=_("role"), max_length=10, choices=Role.choices)
    content = models.TextField(verbose_name=_("content"), blank=True, default="")
    rewritten_query = models.TextField(verbose_name=_("rewritten query"), blank=True, default="",
                                       help_text=_("The standalone query retrieval used"))
    sources = models.JSONField(verbose_name=_("sources"), default=list, blank=True,
                               help_text=_("The chunks given to the answer, numbered as cited"))
    citations = models.JSONField(verbose_name=_("citations"), default=list, blank=True,
                                 help_text=_("The sources the answer cites with [n]"))
    hit = models.BooleanField(verbose_name=_("hit"), null=True, blank=True, help_text=_("Whether the answer was found (false: not found)"))
    not_found_by = models.CharField(verbose_name=_("not found by"), max_length=10, choices=NotFoundBy.choices, null=True, blank=True,
                                    default=None, help_text=_("Who judged the answer not found: retrieval or llm; null on a hit"))
    confidence = models.FloatField(verbose_name=_("confidence"), null=True, blank=True)
    verdict = models.CharField(verbose_name=_("verdict"), max_length=10, choices=Verdict.choices, blank=True, default="",
                               help_text=_("answered, uncertain or not_found; blank until the answer is settled"))
    status = models.CharField(verbose_name=_("status"), max_length=12, choices=MessageStatus.choices, default=MessageStatus.COMPLETE)
    error_code = models.CharField(verbose_name=_("error code"), max_length=50, blank=True, default="")
    answer_mode = models.CharField(verbose_name=_("answer mode"), max_length=12, blank=True, default="",
                                   help_text=_("llm, extractive, faq (an FAQ answer returned directly) or not_found"))
    timings = models.JSONField(verbose_name=_("timings"), default=dict, blank=True, help_text=_("Milliseconds per stage"))
    kb_ids = ArrayField(models.BigIntegerField(), verbose_name=_("knowledge bases"), default=list, blank=True,
                        help_text=_("The KBs this answer's question searched (the KB health page reads them)"))
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("message")
        verbose_name_plural = _("messages")
        ordering = ["id"]
        indexes = [GinIndex(fields=["kb_ids"], name="message_kb_ids")]
        constraints = [
            models.CheckConstraint(condition=Q(role__in=["user", "assistant"]), name="message_role_valid"),
            models.CheckConstraint(
                condition=Q(status__in=["complete", "incomplete", "cancelled", "error"]), name="message_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(not_found_by__isnull=True) | Q(not_found_by__in=["retrieval", "llm"]),
                name="message_not_found_by_valid",
            ),
            models.CheckConstraint(
                condition=Q(confidence__isnull=True) | (Q(confidence__gte=0) & Q(confidence__lte=1)),
                name="message_confidence_range",
            ),
            models.CheckConstraint(
                condition=Q(verdict__in=["", "answered", "uncertain", "not_found"]), name="message_verdict_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:40]}"


class Rating(models.TextChoices):
    UP = "up", _("up")
    DOWN = "down", _("down")


class Feedback(models.Model):
    """A user's rating of an assistant message; one per user and message (a second replaces the first)."""

    message = models.ForeignKey(Message, verbose_name=_("message"), on_delete=models.CASCADE, related_name="feedback")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="chat_feedback")
    rating = models.CharField(verbose_name=_("rating"), max_length=4, choices=Rating.choices)
    reason = models.TextField(verbose_name=_("reason"), blank=True, default="")
    reason_code = models.CharField(verbose_name=_("reason code"), max_length=20, blank=True, default="",
                                   help_text=_("wrong_passage: the answer cited the wrong passage (a 👎 that teaches)"))
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("feedback")
        verbose_name_plural = _("feedback")
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["message", "user"], name="feedback_one_per_user"),
            models.CheckConstraint(condition=Q(rating__in=["up", "down"]), name="feedback_rating_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.rating} on message {self.message_id}"


class GoldenTrigger(models.TextChoices):
    BASELINE = "baseline", _("first run")
    CHANGE = "change", _("after a change")
    NIGHTLY = "nightly", _("nightly")


class GoldenRun(models.Model):
    """One re-run of a KB's golden questions (its answerable labelled questions, ``chat.golden``) and its answer rate."""

    kb = models.ForeignKey("knowledge.KnowledgeBase", verbose_name=_("knowledge base"), on_delete=models.CASCADE,
                           related_name="golden_runs")
    trigger = models.CharField(verbose_name=_("trigger"), max_length=10, choices=GoldenTrigger.choices)
    kb_version = models.BigIntegerField(verbose_name=_("knowledge base version"))
    document_id = models.BigIntegerField(verbose_name=_("document"), null=True, blank=True,
                                         help_text=_("The document changed most recently before the run: the change it measures"))
    document_version = models.PositiveIntegerField(verbose_name=_("document version"), null=True, blank=True)
    questions = models.PositiveIntegerField(verbose_name=_("questions"))
    answered = models.PositiveIntegerField(verbose_name=_("answered"))
    rate = models.FloatField(verbose_name=_("answer rate"))
    previous_rate = models.FloatField(verbose_name=_("previous answer rate"), null=True, blank=True)
    dropped = models.BooleanField(verbose_name=_("dropped"), default=False)
    failed = models.JSONField(verbose_name=_("failed questions"), default=list, blank=True,
                              help_text=_("The golden questions this run did not answer (id and text)"))
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("golden run")
        verbose_name_plural = _("golden runs")
        ordering = ["-id"]
        indexes = [models.Index(fields=["kb", "-id"], name="goldenrun_kb_recent")]
        constraints = [models.CheckConstraint(condition=Q(rate__gte=0) & Q(rate__lte=1), name="goldenrun_rate_range")]

    def __str__(self) -> str:
        return f"golden run of {self.kb_id}: {self.answered}/{self.questions}"
