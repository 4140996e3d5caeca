"""A source's runs: start one (now, on schedule or from the command line) and cancel one."""
from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.audit import Action, record
from core.errors import fail
from sources.errors import SourcesError
from sources.models import ACTIVE_STATUSES, RunStatus, Source, SourceRun, Trigger
from sources.run import enqueue_run


def run_create(*, source: Source, trigger: str = Trigger.MANUAL, user=None) -> SourceRun:
    """A queued run of ``source``; 409 ``source_run_active`` when one is queued or running (the database says so)."""
    try:
        with transaction.atomic():
            run = SourceRun.objects.create(source=source, trigger=trigger,
                                           requested_by=user if (user is not None and user.is_authenticated) else None)
            if trigger != Trigger.SCHEDULE:  # scheduled runs are the platform's own, and their history is the runs list
                record(Action.SOURCE_RUN, obj=source, changes={"trigger": [None, trigger], "run": [None, run.pk]})
            return run
    except IntegrityError:
        raise fail(SourcesError.SOURCE_RUN_ACTIVE) from None


def run_request(*, source: Source, trigger: str = Trigger.MANUAL, user=None) -> SourceRun:
    """Queue a run and start it once the transaction commits (in the background: ``core.jobs``)."""
    with transaction.atomic():
        run = run_create(source=source, trigger=trigger, user=user)
        enqueue_run(run.pk)
    return run


def run_cancel(*, run: SourceRun) -> SourceRun:
    """A queued run ends at once; a running one stops at its next check (``cancelled()``) and removes nothing."""
    with transaction.atomic():
        current = SourceRun.objects.select_for_update().filter(pk=run.pk).first()
        if current is None:
            raise fail(SourcesError.SOURCE_RUN_NOT_FOUND)
        if current.status not in ACTIVE_STATUSES:
            raise fail(SourcesError.SOURCE_RUN_FINISHED)
        if current.status == RunStatus.QUEUED:
            current.status, current.finished_at = RunStatus.CANCELLED, timezone.now()
        current.cancel_requested = True
        current.save(update_fields=["status", "finished_at", "cancel_requested"])
        record(Action.SOURCE_RUN_CANCEL, obj=current.source, changes={"run": [None, current.pk]})
    return current
