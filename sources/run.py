"""One run of a source, top to bottom: claim → connector → scan (each item its own stage) → removals → outcome.

Every fetched item is an ordinary ingestion (``knowledge.ingestion.upload.document_upload``): a changed item becomes
a new version that replaces the serving one when it is ready, and unchanged bytes are recognised by their SHA-256.
Deletions happen only after a complete scan that was not cancelled (``ScanResult.complete``). Started through
``core.jobs`` (``enqueue_run``), by the scheduler (sources/schedule.py) or by ``manage.py source_run``.
"""
from __future__ import annotations

import logging

from django.conf import settings

from core import jobs
from core.errors import ApplicationError, failure_text
from sources.kinds.base import Limits, ScanResult, SourceError
from sources.models import RunStatus, Source, SourceRun
from sources.run_claims import RunProbe, claim_run, finish_run
from sources.run_items import handle, known_items, remove_unseen
from sources.services.sources import kind_class, source_credentials

logger = logging.getLogger(__name__)

RUN_TASK = "sources.run_source"


def enqueue_run(run_id: int) -> None:
    """Run ``execute_run(run_id)`` once the current transaction commits (Celery, the thread worker or inline).

    Background work, as are the ingestions of its items (``run_items.handle``): a person's upload goes first."""
    jobs.after_commit(RUN_TASK, _run_job, run_id, what=f"source run {run_id}", run_here_if_broker_down=True,
                      once=("source-run", run_id), background=True)


def limits_for(source: Source) -> Limits:
    """The platform's budgets (ZHIKU_SOURCES_*, ZHIKU_MAX_UPLOAD_BYTES) for one scan of ``source``."""
    return Limits(max_items=settings.ZHIKU_SOURCES_MAX_ITEMS, max_bytes_per_item=settings.ZHIKU_MAX_UPLOAD_BYTES,
                  timeout_s=settings.ZHIKU_SOURCES_TIMEOUT_SECONDS)


def _run_job(run_id: int) -> None:
    """``execute_run`` as a job: jobs return nothing (the run's row holds how it went)."""
    execute_run(run_id)


def execute_run(run_id: int) -> SourceRun | None:
    """Run a queued run to its end; None when it was not queued any more (taken by another worker, cancelled, gone)."""
    run = claim_run(run_id)
    if run is None:
        return None
    source = run.source
    probe = RunProbe(run)
    try:
        seen, result = _scan(run, source, probe)
    except (SourceError, ApplicationError) as exc:
        return finish_run(run, status=RunStatus.FAILED, error_code=exc.code, note=_message(exc))
    except Exception as exc:  # noqa: BLE001 - the run records it; the traceback goes to the log
        logger.exception("source %s run %s crashed", source.pk, run.pk)
        return finish_run(run, status=RunStatus.FAILED, error_code="source_failed",
                          note=failure_text("source_failed", f"{type(exc).__name__}: {exc}"))
    cancelled = probe.seen_cancel or SourceRun.objects.filter(pk=run.pk, cancel_requested=True).exists()
    run.complete = result.complete and not cancelled and not probe.lost
    if run.complete:
        remove_unseen(run, source, seen)
    if cancelled:
        return finish_run(run, status=RunStatus.CANCELLED, note=result.note)
    return finish_run(run, status=RunStatus.SUCCEEDED, note=result.note)


def _message(exc: SourceError | ApplicationError) -> str:
    return failure_text(exc.code, exc.message) if isinstance(exc, SourceError) else exc.message


def _scan(run: SourceRun, source: Source, probe: RunProbe) -> tuple[set[str], ScanResult]:
    """Ask the connector for every item and handle each; the keys it mentioned and how the scan ended."""
    rows, known = known_items(source)
    limits = limits_for(source)
    connector = kind_class(source.kind)(source.settings, source_credentials(source), limits=limits)
    result = ScanResult()
    seen: set[str] = set()
    try:
        for item in connector.scan(known, result, probe):
            seen.add(item.key)
            handle(run, source, rows, item)
            if len(seen) >= limits.max_items:
                result.complete, result.note = False, f"stopped at the limit of {limits.max_items} items"
                break
            if probe():
                result.complete = False
                break
    finally:
        connector.close()
    return seen, result

