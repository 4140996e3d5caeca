"""Scheduled runs, once across every worker, and the recovery of runs whose worker died.

``tick`` runs every ``ZHIKU_SOURCES_TICK_SECONDS`` in each Celery worker (sources/tasks.py) and, in thread mode, in
the web process (config/asgi.py). It locks the due sources with ``SELECT … FOR UPDATE SKIP LOCKED`` and moves each
one's ``next_run_at`` on in the same transaction, so workers ticking at once split them; the partial unique
constraint on runs (sources/models.py) is the backstop. Why not Celery beat: docs/production.md.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from core.errors import ApplicationError, fail
from sources.errors import SourcesError
from sources.models import RunStatus, Schedule, Source, SourceRun, Trigger
from sources.run import enqueue_run
from sources.services.runs import run_create
from sources.timing import next_run_at

logger = logging.getLogger(__name__)

BATCH = 100
_scheduler_started = threading.Event()


@dataclass
class TickReport:
    started: list[int] = field(default_factory=list)
    stalled: list[int] = field(default_factory=list)
    requeued: list[int] = field(default_factory=list)


def start_due_runs(now: datetime | None = None, report: TickReport | None = None) -> TickReport:
    """Queue one run of every due source this worker could lock, and move each one's ``next_run_at`` on."""
    now = now or timezone.now()
    report = report or TickReport()
    with transaction.atomic():
        due = (Source.objects.select_for_update(skip_locked=True)
               .filter(paused=False, next_run_at__lte=now).exclude(schedule=Schedule.MANUAL).order_by("next_run_at")[:BATCH])
        for source in due:
            Source.objects.filter(pk=source.pk).update(next_run_at=next_run_at(source, now))
            try:
                run = run_create(source=source, trigger=Trigger.SCHEDULE)
            except ApplicationError as exc:  # a run still active: this slot is skipped
                logger.info("source %s: scheduled run skipped (%s)", source.pk, exc.code)
                continue
            enqueue_run(run.pk)
            report.started.append(run.pk)
    return report


def recover_stalled(now: datetime | None = None, report: TickReport | None = None) -> TickReport:
    """Fail running runs whose heartbeat stopped; send queued runs whose task was lost once more."""
    now = now or timezone.now()
    report = report or TickReport()
    silent = now - timedelta(seconds=settings.ZHIKU_SOURCES_STALL_SECONDS)
    with transaction.atomic():
        for run in SourceRun.objects.select_for_update(skip_locked=True).filter(
                status=RunStatus.RUNNING, heartbeat_at__lt=silent):
            SourceRun.objects.filter(pk=run.pk).update(
                status=RunStatus.FAILED, error_code="source_run_stalled", finished_at=now,
                note=str(fail(SourcesError.SOURCE_RUN_STALLED).message))
            report.stalled.append(run.pk)
        for run in SourceRun.objects.select_for_update(skip_locked=True).filter(
                status=RunStatus.QUEUED, created_at__lt=silent):
            enqueue_run(run.pk)  # the claim takes it once, however often it was sent
            report.requeued.append(run.pk)
    if report.stalled or report.requeued:
        logger.warning("sources: failed stalled runs %s, re-sent queued runs %s", report.stalled, report.requeued)
    return report


def tick(now: datetime | None = None) -> TickReport:
    """One round of the scheduler: recover dead runs first (they free their sources), then start due ones."""
    report = recover_stalled(now)
    return start_due_runs(now, report)


def start_scheduler() -> bool:
    """Run ``tick`` every ``ZHIKU_SOURCES_TICK_SECONDS`` in a daemon thread of this process (once per process)."""
    if settings.ZHIKU_SOURCES_TICK_SECONDS <= 0 or _scheduler_started.is_set():
        return False
    _scheduler_started.set()

    def loop() -> None:
        while True:
            try:
                close_old_connections()
                tick()
            except Exception:  # noqa: BLE001 - the database may be restarting; try again next round
                logger.exception("sources scheduler failed")
            finally:
                connection.close()  # no connection left open across a Celery pool fork
            time.sleep(settings.ZHIKU_SOURCES_TICK_SECONDS)

    threading.Thread(target=loop, name="zhiku-sources", daemon=True).start()
    return True
