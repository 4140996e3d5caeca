"""A run's hold on its row: claiming a queued run, the heartbeat and cancel check while it scans, the final write.

Two runs of one source never overlap: the partial unique constraint ``source_one_active_run`` (sources/models.py)
holds at most one queued or running run per source, and a run starts only by moving its own row from queued to
running in one UPDATE, so a run queued twice starts once. A running run writes ``heartbeat_at`` every
``ZHIKU_SOURCES_HEARTBEAT_SECONDS``; the scheduler fails one silent for ``ZHIKU_SOURCES_STALL_SECONDS``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from django.conf import settings
from django.utils import timezone

from sources.models import RunStatus, SourceRun

# The cancel flag is read at most this often (seconds); connectors may ask between every link they follow.
CANCEL_CHECK_SECONDS = 1.0


def claim_run(run_id: int) -> SourceRun | None:
    """Move a queued run to running and return it; None when it is gone, cancelled, or another worker took it."""
    now = timezone.now()
    taken = SourceRun.objects.filter(pk=run_id, status=RunStatus.QUEUED).update(
        status=RunStatus.RUNNING, started_at=now, heartbeat_at=now)
    if not taken:
        return None
    return SourceRun.objects.select_related("source", "source__kb", "source__created_by").get(pk=run_id)


@dataclass
class RunProbe:
    """The ``cancelled`` callable a connector checks between items: it also keeps the run's heartbeat.

    Reads the cancel flag at most every ``CANCEL_CHECK_SECONDS`` and writes the heartbeat, with the counts so
    far (the console shows a running run's progress), at most every ``ZHIKU_SOURCES_HEARTBEAT_SECONDS``;
    once it has answered True it keeps answering True. A run that finds its row no longer running (the
    scheduler failed it as stalled while it was only slow) has lost its claim: it answers True and stops, so it
    never overlaps the next run of its source.
    """

    run: SourceRun
    seen_cancel: bool = False
    lost: bool = False
    _checked_at: float = field(default=-1e18)
    _beat_at: float = field(default_factory=time.monotonic)

    def __call__(self) -> bool:
        now = time.monotonic()
        if now - self._beat_at >= settings.ZHIKU_SOURCES_HEARTBEAT_SECONDS:
            self.beat()
        if not self.seen_cancel and now - self._checked_at >= CANCEL_CHECK_SECONDS:
            self._checked_at = now
            self.seen_cancel = SourceRun.objects.filter(pk=self.run.pk, cancel_requested=True).exists()
        return self.seen_cancel or self.lost

    def beat(self) -> None:
        self._beat_at = time.monotonic()
        run = self.run
        held = SourceRun.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(
            heartbeat_at=timezone.now(), added=run.added, updated=run.updated, unchanged=run.unchanged,
            failed=run.failed, errors=run.errors)
        self.lost = self.lost or not held


def finish_run(run: SourceRun, *, status: str, error_code: str = "", note: str = "") -> SourceRun:
    """Write the run's outcome and counts, if it is still running (a run the sweeper failed as stalled stays failed)."""
    run.status, run.error_code, run.finished_at = status, error_code, timezone.now()
    if note:
        run.note = (f"{run.note}\n{note}" if run.note else note)[:4000]
    SourceRun.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(
        status=status, error_code=error_code, finished_at=run.finished_at, note=run.note, complete=run.complete,
        added=run.added, updated=run.updated, unchanged=run.unchanged, removed=run.removed, failed=run.failed,
        errors=run.errors, heartbeat_at=run.finished_at)
    try:
        run.refresh_from_db()
    except SourceRun.DoesNotExist:  # the source was removed while it ran
        pass
    return run
