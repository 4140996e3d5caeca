"""Background ingestion: Celery tasks when Redis is configured, an in-process worker thread otherwise."""
from __future__ import annotations

import contextvars
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Callable

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings
from django.db import close_old_connections, transaction

logger = logging.getLogger(__name__)

_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()
_pending: set[Future] = set()
# Set by ``queue_only``: hand documents to the background ingestion, never ingest in this process.
_queue_only = contextvars.ContextVar("zhiku_queue_only", default=False)


@shared_task(name="knowledge.ingest_document", acks_late=True, ignore_result=True)
def ingest_document_task(document_id: int) -> None:
    from knowledge.services.documents import document_ingest

    document_ingest(document_id=document_id)


@shared_task(name="knowledge.recalibrate_kb", ignore_result=True)
def recalibrate_kb_task(kb_id: int) -> None:
    from knowledge.services.calibration import recalibrate_kb

    recalibrate_kb(kb_id, if_changed=True)


def _ingest(document_id: int) -> None:
    from knowledge.services.documents import document_ingest

    document_ingest(document_id=document_id)


def submit_in_thread(fn: Callable[..., None], *args, what: str) -> None:
    """Run ``fn(*args)`` on the in-process background worker (thread mode), with a fresh DB connection.

    Crashes are logged as ``what`` (the job's own row already records a failure);
    ``wait_for_background_ingestion`` waits for every job submitted here.
    """
    def run() -> None:
        close_old_connections()
        try:
            fn(*args)
        except Exception:  # noqa: BLE001 - logged; the job's row already carries the failure
            logger.exception("background %s crashed", what)
        finally:
            close_old_connections()

    future = _thread_executor().submit(run)
    _pending.add(future)
    future.add_done_callback(_pending.discard)


def _thread_executor() -> ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        if _executor is None:
            # One worker: ingestion is CPU-bound (embedding) on a small machine and
            # must not starve the request threads.
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zhiku-ingest")
        return _executor


@contextmanager
def queue_only():
    """Within the block, ``enqueue_ingest`` leaves the ingestion to the processes that ingest in the background.

    For start-up steps (``manage.py bootstrap``), which must not ingest before the
    server listens. In Celery mode the task is sent to the broker (one it cannot
    reach leaves the document pending, and a worker's sweeper queues it after
    ``ZHIKU_PENDING_REQUEUE_SECONDS``); in thread and sync mode the document is
    left pending, and the web process queues every pending document once it
    listens (``knowledge.services.recovery.start_sweeper``).
    """
    reset = _queue_only.set(True)
    try:
        yield
    finally:
        _queue_only.reset(reset)


def enqueue_ingest(document_id: int) -> None:
    """Queue ingestion of ``document_id`` once the current transaction commits (see also ``queue_only``)."""
    mode = settings.ZHIKU_INGEST_MODE
    if mode not in ("celery", "thread", "sync"):
        raise ValueError(f"Unknown ZHIKU_INGEST_MODE {mode!r}")
    if _queue_only.get():
        if mode == "celery":
            transaction.on_commit(lambda: _send_only(document_id))
        return
    if mode == "celery":
        transaction.on_commit(lambda: _send_or_run_here(document_id))
    elif mode == "thread":
        transaction.on_commit(lambda: submit_in_thread(_ingest, document_id, what=f"ingestion of {document_id}"))
    else:
        transaction.on_commit(lambda: _ingest(document_id))


def _send_only(document_id: int) -> None:
    """Send the task to the workers; when the broker is unreachable, leave the document pending for the sweeper."""
    try:
        ingest_document_task.apply_async(args=[document_id], retry=False)
    except Exception:  # noqa: BLE001 - kombu/redis raise several types for an unreachable broker
        logger.warning("broker unreachable: document %s stays pending until a worker's sweeper queues it",
                       document_id, exc_info=True)


def _send_or_run_here(document_id: int) -> None:
    """Send the task to the workers; when the broker is unreachable, ingest in this process instead.

    The document row is already committed: a failed send must not leave it
    pending for ever (a Redis outage during an upload used to answer 500 and
    strand the row). If this process dies too, the sweeper re-queues it later.
    """
    try:
        ingest_document_task.apply_async(args=[document_id], retry=False)
    except Exception:  # noqa: BLE001 - kombu/redis raise several types for an unreachable broker
        logger.warning("broker unreachable: ingesting document %s in this process", document_id, exc_info=True)
        submit_in_thread(_ingest, document_id, what=f"ingestion of {document_id}")


@worker_ready.connect
def _start_sweeper_in_worker(**_kwargs) -> None:
    """Each Celery worker re-queues documents whose ingestion died (knowledge.services.recovery)."""
    from knowledge.services.recovery import start_sweeper

    start_sweeper()


def wait_for_background_ingestion(timeout: float = 120.0) -> None:
    """Block until the in-process queue is empty (thread mode; used by commands and tests).

    Jobs queue more jobs (a finished ingestion schedules its KB's recalibration),
    so this waits until nothing is left, not only for what was queued at the call.
    """
    while _pending:
        for future in list(_pending):
            future.result(timeout=timeout)
