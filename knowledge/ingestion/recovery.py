"""Ingestion that survives crashes, the sweeper's side: documents whose run died are queued again.

A run claims its document and keeps a heartbeat (``knowledge.ingestion.claims``); the sweeper
(``sweep``, run every ``ZHIKU_SWEEP_SECONDS`` by ``start_sweeper``) puts a document whose heartbeat went
silent back in the queue, and the next run reuses the vectors the dead one had staged. A web process in
thread mode also queues every pending document once it listens (``queue_pending``). A document that
kills its worker ``ZHIKU_INGEST_MAX_ATTEMPTS`` times fails with ``ingest_crashed`` instead of looping for
ever. Why not Celery's own redelivery or celery beat: see ``knowledge.ingestion.claims``.
Other apps add work to each round with ``each_round`` (the audit log's retention purge: audit/apps.py).
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models.functions import Coalesce
from django.utils import timezone

from knowledge.ingestion import run
from knowledge.ingestion.claims import discard_staged, stalled_q
from knowledge.models import Document, DocumentStatus

logger = logging.getLogger(__name__)

_sweeper_started = threading.Event()
_round_hooks: list[Callable[[], object]] = []


def each_round(hook: Callable[[], object]) -> None:
    """Run ``hook`` on every sweep round, after the sweep (an app's AppConfig.ready registers it, once)."""
    if hook not in _round_hooks:
        _round_hooks.append(hook)


@dataclass
class SweepReport:
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)


def sweep(now: datetime | None = None) -> SweepReport:
    """Queue stalled documents again; fail those that already used up their attempts."""
    report = SweepReport()
    with transaction.atomic():
        # skip_locked: a retry or delete holding a document's row lock wins, and two sweepers split the work.
        for doc in Document.objects.select_for_update(skip_locked=True).filter(stalled_q(now)).only(
                "pk", "kb_id", "status", "ingest_attempts", "queued_in_background"):
            if doc.status == DocumentStatus.PROCESSING and doc.ingest_attempts >= settings.ZHIKU_INGEST_MAX_ATTEMPTS:
                Document.objects.filter(pk=doc.pk).update(
                    status=DocumentStatus.FAILED, claim="", error_code="ingest_crashed", updated_at=timezone.now(),
                    error_message=f"Ingestion stopped {doc.ingest_attempts} times without finishing (the worker "
                                  "died or was killed). Check the file, then retry.")
                discard_staged(doc.pk)
                report.failed.append(doc.pk)
                continue
            Document.objects.filter(pk=doc.pk).update(status=DocumentStatus.PENDING, claim="", updated_at=timezone.now())
            # In its own queue again (a person's upload stays ahead of background work), at its end.
            run.enqueue_ingest(doc.pk, background=doc.queued_in_background)  # sent when this transaction commits
            report.requeued.append(doc.pk)
    if report.requeued or report.failed:
        logger.warning("sweeper: re-queued %s, failed %s", report.requeued, report.failed)
    return report


def queue_pending(*, exclude: list[int] | tuple = ()) -> list[int]:
    """Queue every pending document (but ``exclude``) for this process's background ingestion; their ids.

    What a web process in thread mode does once it listens: a pending document
    has no run, and its task, if it had one, was in the in-memory queue of a
    process that is gone (killed mid-ingestion), or it was stored by a start-up
    step that ingests nothing (``manage.py bootstrap``, ``core.jobs.queue_only``).
    A document that another live process has queued too is still ingested once:
    the first claim takes it and the other run finds it taken (``claim_document``). Each goes back to the queue
    it was in (the demo KB's files and a source's to the background one, behind people's uploads), in the order
    they were queued before.
    """
    with transaction.atomic():
        rows = list(Document.objects.filter(status=DocumentStatus.PENDING).exclude(pk__in=list(exclude))
                    .order_by(Coalesce("queued_at", "updated_at"), "pk").values_list("pk", "queued_in_background"))
        for doc_id, background in rows:
            run.enqueue_ingest(doc_id, background=background)  # submitted when this transaction commits
        ids = [doc_id for doc_id, _ in rows]
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
                if sweeping:
                    for hook in _round_hooks:
                        hook()
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
