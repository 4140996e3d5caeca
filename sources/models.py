"""Sources attached to a KB, their runs and the items each run kept (what the next run compares against)."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from knowledge.models import Document, KnowledgeBase, Role

USER_MODEL = settings.AUTH_USER_MODEL  # Source has a field named ``settings``


class Schedule(models.TextChoices):
    MANUAL = "manual", _("manual")
    HOURLY = "hourly", _("hourly")
    DAILY = "daily", _("daily")
    CRON = "cron", _("cron expression")


class Source(models.Model):
    """A place documents live (a web site, a repository, a bucket, a Feishu or Yuque space), kept in sync with a KB.

    ``credentials`` holds one Fernet token (providers/secrets.py) of the JSON object of the kind's secret
    fields: written, never read back by any page or answer (only their names are shown).
    """

    kb = models.ForeignKey(KnowledgeBase, verbose_name=_("knowledge base"), on_delete=models.CASCADE, related_name="sources")
    kind = models.CharField(verbose_name=_("kind"), max_length=30)
    name = models.CharField(verbose_name=_("name"), max_length=200)
    settings = models.JSONField(verbose_name=_("settings"), default=dict, blank=True)
    credentials = models.TextField(verbose_name=_("credentials"), blank=True, default="",
                                   help_text=_("Encrypted; never shown again"))
    credential_names = models.JSONField(verbose_name=_("credential names"), default=list, blank=True)
    schedule = models.CharField(verbose_name=_("schedule"), max_length=10, choices=Schedule.choices, default=Schedule.MANUAL)
    cron = models.CharField(verbose_name=_("cron expression"), max_length=100, blank=True, default="")
    paused = models.BooleanField(verbose_name=_("paused"), default=False)
    next_run_at = models.DateTimeField(verbose_name=_("next run at"), null=True, blank=True)
    created_by = models.ForeignKey(USER_MODEL, verbose_name=_("created by"), null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    # Not a column: the caller's role on the KB, set by sources.selectors.source_get_for_user.
    caller_role: Role

    class Meta:
        verbose_name = pgettext_lazy("data source", "source")
        verbose_name_plural = pgettext_lazy("data source", "sources")
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["kb", "name"], name="source_name_unique_in_kb")]
        indexes = [models.Index(fields=["next_run_at"], condition=Q(paused=False) & ~Q(schedule="manual"),
                                name="source_due")]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"


class RunStatus(models.TextChoices):
    QUEUED = "queued", _("queued")
    RUNNING = "running", _("running")
    SUCCEEDED = "succeeded", _("succeeded")
    FAILED = "failed", _("failed")
    CANCELLED = "cancelled", _("cancelled")


ACTIVE_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING)


class Trigger(models.TextChoices):
    MANUAL = "manual", _("manual")
    SCHEDULE = "schedule", _("schedule")
    CLI = "cli", _("command line")


class SourceRun(models.Model):
    """One run of a source: what it added, updated, left alone, removed and failed to read."""

    source = models.ForeignKey(Source, verbose_name=pgettext_lazy("data source", "source"), on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(verbose_name=_("status"), max_length=10, choices=RunStatus.choices, default=RunStatus.QUEUED)
    trigger = models.CharField(verbose_name=_("trigger"), max_length=10, choices=Trigger.choices, default=Trigger.MANUAL)
    requested_by = models.ForeignKey(USER_MODEL, verbose_name=_("requested by"), null=True, blank=True,
                                     on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    started_at = models.DateTimeField(verbose_name=_("started at"), null=True, blank=True)
    finished_at = models.DateTimeField(verbose_name=_("finished at"), null=True, blank=True)
    heartbeat_at = models.DateTimeField(verbose_name=_("heartbeat at"), null=True, blank=True)
    added = models.PositiveIntegerField(verbose_name=pgettext_lazy("run count", "added"), default=0)
    updated = models.PositiveIntegerField(verbose_name=pgettext_lazy("run count", "updated"), default=0)
    unchanged = models.PositiveIntegerField(verbose_name=pgettext_lazy("run count", "unchanged"), default=0)
    removed = models.PositiveIntegerField(verbose_name=pgettext_lazy("run count", "removed"), default=0)
    failed = models.PositiveIntegerField(verbose_name=pgettext_lazy("run count", "failed"), default=0)
    # [{"key", "url", "code", "message"}], at most ZHIKU_SOURCES_MAX_RUN_ERRORS (``failed`` counts them all).
    errors = models.JSONField(verbose_name=_("errors"), default=list, blank=True)
    complete = models.BooleanField(verbose_name=_("complete scan"), default=False)
    error_code = models.CharField(verbose_name=_("error code"), max_length=50, blank=True, default="")
    note = models.TextField(verbose_name=_("note"), blank=True, default="")
    cancel_requested = models.BooleanField(verbose_name=_("cancel requested"), default=False)

    # Not a column: the status's style in the console's pages (sources.console.RUN_STATUS_CLASSES), set by their views.
    css: str

    class Meta:
        verbose_name = _("source run")
        verbose_name_plural = _("source runs")
        ordering = ["-id"]
        constraints = [
            # Two runs of one source never overlap: the database refuses a second queued or running run.
            models.UniqueConstraint(fields=["source"], condition=Q(status__in=["queued", "running"]),
                                    name="source_one_active_run"),
        ]
        indexes = [models.Index(fields=["status", "heartbeat_at"], name="source_run_status")]

    def __str__(self) -> str:
        return f"{self.source_id} run {self.pk} ({self.status})"

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_STATUSES


class SourceItem(models.Model):
    """One item a source's runs kept: its key at the source, its revision, and the document it became."""

    source = models.ForeignKey(Source, verbose_name=pgettext_lazy("data source", "source"), on_delete=models.CASCADE, related_name="items")
    key = models.CharField(verbose_name=_("key"), max_length=2000)
    revision = models.CharField(verbose_name=_("revision"), max_length=500, blank=True, default="")
    state = models.JSONField(verbose_name=_("state"), default=dict, blank=True)
    name = models.CharField(verbose_name=_("source name"), max_length=500)
    url = models.URLField(verbose_name=_("URL"), max_length=2000, blank=True, default="")
    title = models.CharField(verbose_name=_("title"), max_length=500, blank=True, default="")
    # The latest version uploaded for this item (the serving one, or a newer one still being ingested).
    document = models.ForeignKey(Document, verbose_name=_("document"), null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="source_items")
    last_seen_run = models.ForeignKey(SourceRun, verbose_name=_("last seen in run"), null=True, blank=True,
                                      on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("source item")
        verbose_name_plural = _("source items")
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["source", "key"], name="source_item_key_unique"),
            models.UniqueConstraint(fields=["source", "name"], name="source_item_name_unique"),
        ]

    def __str__(self) -> str:
        return self.name
