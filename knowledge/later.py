"""Run a job later, the one place that reads ``ZHIKU_INGEST_MODE``: once the current transaction commits, as a
Celery task ("celery"), on this process's background worker thread ("thread") or in this process at once ("sync").

Services import this module; ``knowledge.tasks`` holds only the Celery entry points, which run the same
functions a job here runs in-process. A task is sent by its name, so nothing here imports the services.
"""
from __future__ import annotations

import contextvars
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Callable, Hashable

from django.conf import settings
from django.db import close_old_connections, transaction

from config.celery import app as celery_app

logger = logging.getLogger(__name__)

MODES = ("celery", "thread", "sync")

_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()
_pending: set[Future] = set()
# Jobs waiting on the thread worker under a key (``once``): one waiting job per key.
_waiting: set[Hashable] = set()
_waiting_lock = threading.Lock()
# Set by ``queue_only``: hand jobs to the processes that run them in the background, never run them here.
_queue_only = contextvars.ContextVar("zhiku_queue_only", default=False)


def mode() -> str:
    """``ZHIKU_INGEST_MODE``, checked."""
    value = settings.ZHIKU_INGEST_MODE
    if value not in MODES:
        raise ValueError(f"Unknown ZHIKU_INGEST_MODE {value!r}")
    return value


@contextmanager
def queue_only():
    """Within the block, ``after_commit`` leaves its jobs to the processes that run them in the background.

    For start-up steps (``manage.py bootstrap``), which must not ingest before the
    server listens. In Celery mode the task is sent to the broker (one it cannot
    reach leaves the document pending, and a worker's sweeper queues it after
    ``ZHIKU_PENDING_REQUEUE_SECONDS``); in thread and sync mode the document is
    left pending, and the web process queues every pending document once it
    listens (``knowledge.ingestion.recovery.start_sweeper``).
    """
    reset = _queue_only.set(True)
    try:
        yield
    finally:
        _queue_only.reset(reset)


def after_commit(task: str, fn: Callable[..., None], *args, what: str, countdown: float | None = None,
                 run_here_if_broker_down: bool = False, once: Hashable | None = None,
                 honour_queue_only: bool = True) -> None:
    """Run ``fn(*args)`` later (the Celery task named ``task`` runs the same), once the transaction commits.

    ``run_here_if_broker_down``: in Celery mode, a broker that cannot be reached makes this process's
    thread worker run the job (otherwise the failure is logged and the job's row waits for a sweeper).
    ``once``: in thread mode, a job already waiting under this key is not queued twice. ``countdown``:
    the Celery task waits that many seconds first. ``honour_queue_only`` false: ``queue_only`` does not apply.
    """
    # A job that may run here (an ingestion) fails its caller: an unknown mode now, before the transaction
    # commits, and its own failure at the commit. Any other (a recalibration) never fails the caller: Django
    # logs the error and the caller's work stands.
    robust = not run_here_if_broker_down
    if not robust:
        mode()
    held = honour_queue_only and _queue_only.get()
    transaction.on_commit(lambda: _dispatch(task, fn, args, what=what, countdown=countdown, queue_only=held,
                                            run_here=run_here_if_broker_down, once=once), robust=robust)


def _dispatch(task: str, fn: Callable[..., None], args: tuple, *, what: str, countdown: float | None,
              queue_only: bool, run_here: bool, once: Hashable | None) -> None:
    current = mode()
    if current == "celery":
        try:
            celery_app.send_task(task, args=list(args), countdown=countdown, retry=False)
        except Exception:  # noqa: BLE001 - kombu/redis raise several types for an unreachable broker
            if run_here and not queue_only:
                logger.warning("broker unreachable: running %s in this process", what, exc_info=True)
                submit_in_thread(fn, *args, what=what)
            else:
                logger.warning("broker unreachable: %s waits for a worker's sweeper", what, exc_info=True)
    elif queue_only:
        return
    elif current == "thread":
        if once is not None:
            with _waiting_lock:
                if once in _waiting:
                    return
                _waiting.add(once)
        submit_in_thread(fn, *args, what=what, once=once)
    else:
        fn(*args)


def submit_in_thread(fn: Callable[..., None], *args, what: str, once: Hashable | None = None) -> None:
    """Run ``fn(*args)`` on the in-process background worker (thread mode), with a fresh DB connection.

    Crashes are logged as ``what`` (the job's own row already records a failure);
    ``wait_for_background_ingestion`` waits for every job submitted here.
    """
    def run() -> None:
        if once is not None:
            with _waiting_lock:
                _waiting.discard(once)
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


def wait_for_background_ingestion(timeout: float = 120.0) -> None:
    """Block until the in-process queue is empty (thread mode; used by commands and tests).

    Jobs queue more jobs (a finished ingestion schedules its KB's recalibration),
    so this waits until nothing is left, not only for what was queued at the call.
    """
    while _pending:
        for future in list(_pending):
            future.result(timeout=timeout)
