"""Ingestion that survives crashes: claims, heartbeats and the sweeper.

An ingestion run claims its document with a fresh token (``claim_document``)
and, while it works, a heartbeat thread touches ``heartbeat_at``. A worker that
dies — SIGKILL, the OOM killer, a Celery pool child lost mid-task, a machine
restart — stops the heartbeat, and the sweeper (``sweep``, run every
``ZHIKU_SWEEP_SECONDS`` by ``start_sweeper``) puts the document back in the
queue; the next run reuses the vectors the dead one had staged. A web process in
thread mode also queues every pending document once it listens (``queue_pending``):
the in-memory queue of the process before it died with it. A document
that kills its worker ``ZHIKU_INGEST_MAX_ATTEMPTS`` times fails with
``ingest_crashed`` instead of looping for ever.

Why not Celery's own redelivery: with ``acks_late`` the broker redelivers a
killed worker's task only after its visibility timeout (an hour by default), and
a task whose pool child died is acknowledged and lost (``WorkerLostError``).
Why not celery beat: its schedule file is a pickle ``shelve``, and the sweep
needs no schedule, only a loop in a process that is running anyway.
"""
from __future__ import annotations

import logging
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from knowledge.models import Document, DocumentStatus, StagedEmbedding

logger = logging.getLogger(__name__)

_sweeper_started = threading.Event()


def _silent_q(now: datetime) -> Q:
    """Processing documents whose run stopped writing its heartbeat (or never wrote one)."""
    silent = now - timedelta(seconds=settings.ZHIKU_INGEST_STALL_SECONDS)
    return Q(status=DocumentStatus.PROCESSING) & (Q(heartbeat_at__lt=silent) | Q(heartbeat_at__isnull=True))


def stalled_q(now: datetime | None = None) -> Q:
    """Documents whose ingestion stopped: processing with a silent heartbeat, or pending and never picked up."""
    now = now or timezone.now()
    forgotten = now - timedelta(seconds=settings.ZHIKU_PENDING_REQUEUE_SECONDS)
    return _silent_q(now) | Q(status=DocumentStatus.PENDING, updated_at__lt=forgotten)


def is_stalled(document: Document, now: datetime | None = None) -> bool:
    return Document.objects.filter(stalled_q(now), pk=document.pk).exists()


def claim_document(document_id: int) -> str | None:
    """Take ``document_id`` for one ingestion run; its token, or None when it is not this run's to take.

    Pending documents are taken; a processing one only when its heartbeat
    stopped, so a redelivered or duplicated task never runs beside a live one.
    A ready or failed one is not taken: a late duplicate of its task (a second
    web process that queued the same pending documents at its start, the
    broker's redelivery) is a no-op. Retry and re-index put a document back to
    pending first.
    """
    token = uuid.uuid4().hex
    now = timezone.now()
    takeable = Q(status=DocumentStatus.PENDING) | _silent_q(now)
    claimed = Document.objects.filter(takeable, pk=document_id).update(
        status=DocumentStatus.PROCESSING, claim=token, heartbeat_at=now, ingest_attempts=F("ingest_attempts") + 1,
        error_code="", error_message="", chunks_done=0, chunks_total=0, updated_at=now,
    )
    return token if claimed else None


def still_holds(document_id: int, token: str, **changes) -> bool:
    """Apply ``changes`` (and a heartbeat) if this run still holds the document; False once another run took it."""
    return bool(Document.objects.filter(pk=document_id, claim=token, status=DocumentStatus.PROCESSING).update(
        heartbeat_at=timezone.now(), **changes))


@contextmanager
def heartbeat(document_id: int, token: str):
    """Touch the document's heartbeat every ``ZHIKU_INGEST_HEARTBEAT_SECONDS`` while the block runs.

    A thread, so a long parse (a scanned PDF's OCR) or one slow embedding batch
    still shows the run alive. In "sync" mode the document row may be
    uncommitted (a test's transaction), invisible to the thread's own
    connection; nothing can crash apart from the caller there, so no thread.
    """
    if settings.ZHIKU_INGEST_MODE == "sync":
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(settings.ZHIKU_INGEST_HEARTBEAT_SECONDS):
                still_holds(document_id, token)
        except Exception:  # noqa: BLE001 - a lost heartbeat only lets the sweeper retry sooner
            logger.exception("heartbeat of document %s failed", document_id)
        finally:
            connection.close()

    thread = threading.Thread(target=beat, name=f"zhiku-heartbeat-{document_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


def discard_staged(document_id: int) -> None:
    StagedEmbedding.objects.filter(document_id=document_id).delete()


@dataclass
class SweepReport:
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)


def sweep(now: datetime | None = None) -> SweepReport:
    """Queue stalled documents again; fail those that already used up their attempts."""
    from knowledge.tasks import enqueue_ingest

    report = SweepReport()
    with transaction.atomic():
        # skip_locked: a retry or delete holding a document's row lock wins, and two sweepers split the work.
        for doc in Document.objects.select_for_update(skip_locked=True).filter(stalled_q(now)).only(
                "pk", "status", "ingest_attempts"):
            if doc.status == DocumentStatus.PROCESSING and doc.ingest_attempts >= settings.ZHIKU_INGEST_MAX_ATTEMPTS:
                Document.objects.filter(pk=doc.pk).update(
                    status=DocumentStatus.FAILED, claim="", error_code="ingest_crashed", updated_at=timezone.now(),
                    error_message=f"Ingestion stopped {doc.ingest_attempts} times without finishing (the worker "
                                  "died or was killed). Check the file, then retry.")
                discard_staged(doc.pk)
                report.failed.append(doc.pk)
                continue
            Document.objects.filter(pk=doc.pk).update(status=DocumentStatus.PENDING, claim="", updated_at=timezone.now())
            enqueue_ingest(doc.pk)  # sent when this transaction commits
            report.requeued.append(doc.pk)
    if report.requeued or report.failed:
        logger.warning("sweeper: re-queued %s, failed %s", report.requeued, report.failed)
    return report


def queue_pending(*, exclude: list[int] | tuple = ()) -> list[int]:
    """Queue every pending document (but ``exclude``) for this process's background ingestion; their ids.

    What a web process in thread mode does once it listens: a pending document
    has no run, and its task, if it had one, was in the in-memory queue of a
    process that is gone (killed mid-ingestion), or it was stored by a start-up
    step that ingests nothing (``manage.py bootstrap``, ``knowledge.tasks.queue_only``).
    A document that another live process has queued too is still ingested once:
    the first claim takes it and the other run finds it taken (``claim_document``).
    """
    from knowledge.tasks import enqueue_ingest

    with transaction.atomic():
        ids = list(Document.objects.filter(status=DocumentStatus.PENDING).exclude(pk__in=list(exclude))
                   .order_by("pk").values_list("pk", flat=True))
        for doc_id in ids:
            enqueue_ingest(doc_id)  # submitted when this transaction commits
    if ids:
        logger.warning("start-up: queued %s pending documents for background ingestion", len(ids))
    return ids


def start_sweeper(*, listening: threading.Event | None = None) -> bool:
    """Run ``sweep`` every ``ZHIKU_SWEEP_SECONDS`` in a daemon thread of this process (once per process).

    ``listening`` is for the web process in thread mode (config/asgi.py), which
    ingests what it queues: the thread waits until that event says the server
    listens, then sweeps and queues every pending document (``queue_pending``),
    so start-up never waits for ingestion and the documents a killed process
    left, or bootstrap stored, are ingested while the server answers. That
    first pass runs even with the sweep turned off (``ZHIKU_SWEEP_SECONDS`` 0),
    and is tried again until the database answers.
    """
    sweeping = settings.ZHIKU_SWEEP_SECONDS > 0
    if _sweeper_started.is_set() or (not sweeping and listening is None):
        return False
    _sweeper_started.set()

    def loop() -> None:
        pending_queued = listening is None
        if listening is not None:
            listening.wait()
        while True:
            try:
                close_old_connections()
                report = sweep() if sweeping else SweepReport()
                if not pending_queued:
                    queue_pending(exclude=report.requeued)
                    pending_queued = True
            except Exception:  # noqa: BLE001 - the database may be restarting; try again next round
                logger.exception("ingestion sweeper failed")
            finally:
                connection.close()  # no connection left open across a Celery pool fork
            if pending_queued and not sweeping:
                return
            time.sleep(settings.ZHIKU_SWEEP_SECONDS if sweeping else 5)

    threading.Thread(target=loop, name="zhiku-sweeper", daemon=True).start()
    return True
