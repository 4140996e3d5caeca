"""Background ingestion: Celery tasks when Redis is configured, an in-process worker thread otherwise."""
from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections, transaction

logger = logging.getLogger(__name__)

_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()
_pending: set[Future] = set()


@shared_task(name="knowledge.ingest_document", acks_late=True, ignore_result=True)
def ingest_document_task(document_id: int) -> None:
    from knowledge.services.documents import document_ingest

    document_ingest(document_id=document_id)


@shared_task(name="knowledge.recalibrate_kb", ignore_result=True)
def recalibrate_kb_task(kb_id: int) -> None:
    from knowledge.services.calibration import recalibrate_kb

    recalibrate_kb(kb_id, if_changed=True)


def _run_in_thread(document_id: int) -> None:
    from knowledge.services.documents import document_ingest

    close_old_connections()
    try:
        document_ingest(document_id=document_id)
    except Exception:  # noqa: BLE001 - logged; the document row already carries the failure
        logger.exception("background ingestion of %s crashed", document_id)
    finally:
        close_old_connections()


def _thread_executor() -> ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        if _executor is None:
            # One worker: ingestion is CPU-bound (embedding) on a small machine and
            # must not starve the request threads.
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zhiku-ingest")
        return _executor


def enqueue_ingest(document_id: int) -> None:
    """Queue ingestion of ``document_id`` once the current transaction commits."""
    mode = settings.ZHIKU_INGEST_MODE
    if mode == "celery":
        transaction.on_commit(lambda: ingest_document_task.delay(document_id))
    elif mode == "thread":
        def submit() -> None:
            future = _thread_executor().submit(_run_in_thread, document_id)
            _pending.add(future)
            future.add_done_callback(_pending.discard)

        transaction.on_commit(submit)
    elif mode == "sync":
        def run_now() -> None:
            from knowledge.services.documents import document_ingest

            document_ingest(document_id=document_id)

        transaction.on_commit(run_now)
    else:
        raise ValueError(f"Unknown ZHIKU_INGEST_MODE {mode!r}")


def wait_for_background_ingestion(timeout: float = 120.0) -> None:
    """Block until the in-process queue is empty (thread mode; used by commands and tests).

    Jobs queue more jobs (a finished ingestion schedules its KB's recalibration),
    so this waits until nothing is left, not only for what was queued at the call.
    """
    while _pending:
        for future in list(_pending):
            future.result(timeout=timeout)
