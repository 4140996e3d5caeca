"""Ingestion that survives crashes, the run's side: claims and heartbeats (the sweeper: ``knowledge.ingestion.recovery``).

An ingestion run claims its document with a fresh token (``claim_document``)
and, while it works, a heartbeat thread touches ``heartbeat_at``. A worker that
dies — SIGKILL, the OOM killer, a Celery pool child lost mid-task, a machine
restart — stops the heartbeat, and the sweeper (``knowledge.ingestion.recovery.sweep``, run every
``ZHIKU_SWEEP_SECONDS``) puts the document back in the
queue; the next run reuses the vectors the dead one had staged. A web process in
thread mode also queues every pending document once it listens (``knowledge.ingestion.recovery.queue_pending``):
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
import uuid
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import F, Q
from django.utils import timezone

from knowledge.models import Document, DocumentStatus, StagedEmbedding

logger = logging.getLogger(__name__)


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


def release(document_id: int, token: str) -> bool:
    """Give the document back, pending, if this run still holds it (its process is shutting down): the next start
    queues it at once (``knowledge.ingestion.recovery.queue_pending``) and resumes from its staged vectors."""
    return bool(Document.objects.filter(pk=document_id, claim=token, status=DocumentStatus.PROCESSING).update(
        status=DocumentStatus.PENDING, claim="", heartbeat_at=None, updated_at=timezone.now()))


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
