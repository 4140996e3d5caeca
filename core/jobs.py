"""Run a job later, the one place that reads ``ZHIKU_INGEST_MODE``: once the current transaction commits, as a
Celery task ("celery"), on this process's background worker thread ("thread") or in this process at once ("sync").

Services import this module; ``knowledge.tasks`` holds only the Celery entry points, which run the same
functions a job here runs in-process. A task is sent by its name, so nothing here imports the services.

Shutting down (``stop``, called as the interpreter begins to exit, before it waits for the worker threads): jobs
still queued on this process's threads are dropped, a job queued later is refused with a log line, and a running
job sees ``stopping()`` at its next check (an ingestion: each embedding batch, each OCR page, its parse's poll) and
ends; what they would have done stays in the database for the next start (a document pending again,
``knowledge.ingestion.recovery.queue_pending``). The process exits within seconds, where it used to run the whole
queue first and then fail the jobs that queued others ("cannot schedule new futures after interpreter shutdown").
"""
from __future__ import annotations

import contextvars
import logging
import threading
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from celery import current_app as celery_app  # the project's app (config/celery.py), set as current when config is imported
from django.conf import settings
from django.db import close_old_connections, transaction

logger = logging.getLogger(__name__)

MODES = ("celery", "thread", "sync")

_executor: ThreadPoolExecutor | None = None
# Pools of their own (``after_commit``'s ``pool``): jobs that must not wait behind an ingestion (a chat bot's reply).
_pools: dict[str, ThreadPoolExecutor] = {}
POOL_WORKERS = 2
_executor_lock = threading.Lock()
_pending: set[Future[None]] = set()
# The thread worker's jobs by lane (``after_commit``'s ``lane``: a KB's ingestions share one), and when each lane
# last had a turn (a count of turns): the lane whose turn is longest ago goes next, one never served first.
_lanes: dict[Hashable, deque[Callable[[], None]]] = {}
_last_turn: dict[Hashable, int] = {}
_turns = 0
_lanes_lock = threading.Lock()
# Jobs waiting on the thread worker under a key (``once``): one waiting job per key.
_waiting: set[Hashable] = set()
_waiting_lock = threading.Lock()
# Set by ``queue_only``: hand jobs to the processes that run them in the background, never run them here.
_queue_only = contextvars.ContextVar("zhiku_queue_only", default=False)
# Set by ``stop``: the process is shutting down.
_stopping = threading.Event()


class Stopping(Exception):
    """Raised by ``raise_if_stopping`` in a running job: the process is shutting down. The job puts its row back as
    the next start should find it; the worker thread logs the stop, not a crash."""


def stopping() -> bool:
    """Whether this process is shutting down: a running job checks it and ends early, leaving its row to the next start."""
    return _stopping.is_set()


def raise_if_stopping() -> None:
    """``Stopping`` once this process is shutting down: a long job calls it between its steps."""
    if _stopping.is_set():
        raise Stopping()


def stop() -> None:
    """Refuse new jobs on this process's threads and drop the queued ones; running ones see ``stopping()``.

    Called once the interpreter begins to exit (registered below), before it joins the executors' threads; also
    callable by a server that stops on its own. Idempotent."""
    if _stopping.is_set():
        return
    _stopping.set()
    with _executor_lock:
        executors = [e for e in (_executor, *_pools.values()) if e is not None]
    for executor in executors:
        executor.shutdown(wait=False, cancel_futures=True)
    with _lanes_lock:
        dropped = sum(len(jobs) for jobs in _lanes.values())
        _lanes.clear()
    with _waiting_lock:
        _waiting.clear()
    if dropped or _pending:
        logger.warning("shutting down: %s queued background jobs dropped (their rows wait for the next start), "
                       "%s running told to stop", dropped, len([f for f in _pending if f.running()]))


def mode() -> str:
    """``ZHIKU_INGEST_MODE``, checked."""
    value = settings.ZHIKU_INGEST_MODE
    if value not in MODES:
        raise ValueError(f"Unknown ZHIKU_INGEST_MODE {value!r}")
    return value


@contextmanager
def queue_only() -> Iterator[None]:
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


def after_commit(task: str, fn: Callable[..., None], *args: Any, what: str, countdown: float | None = None,
                 run_here_if_broker_down: bool = False, once: Hashable | None = None,
                 honour_queue_only: bool = True, lane: Hashable | None = None, pool: str | None = None) -> None:
    """Run ``fn(*args)`` later (the Celery task named ``task`` runs the same), once the transaction commits.

    ``run_here_if_broker_down``: in Celery mode, a broker that cannot be reached makes this process's
    thread worker run the job (otherwise the failure is logged and the job's row waits for a sweeper).
    ``once``: in thread mode, a job already waiting under this key is not queued twice. ``countdown``:
    the Celery task waits that many seconds first. ``honour_queue_only`` false: ``queue_only`` does not apply.
    ``lane``: in thread mode, the worker takes one job from each lane in turn (a KB's ingestions share a lane,
    so one KB's long queue does not hold back another's first file). ``pool``: in thread mode, the job runs on
    that pool's own threads, in the order it came (never behind an ingestion on the shared worker).
    """
    # A job that may run here (an ingestion) fails its caller: an unknown mode now, before the transaction
    # commits, and its own failure at the commit. Any other (a recalibration) never fails the caller: Django
    # logs the error and the caller's work stands.
    robust = not run_here_if_broker_down
    if not robust:
        mode()
    held = honour_queue_only and _queue_only.get()
    transaction.on_commit(lambda: _dispatch(task, fn, args, what=what, countdown=countdown, queue_only=held,
                                            run_here=run_here_if_broker_down, once=once, lane=lane, pool=pool),
                        robust=robust)


def _dispatch(task: str, fn: Callable[..., None], args: tuple[Any, ...], *, what: str, countdown: float | None,
              queue_only: bool, run_here: bool, once: Hashable | None, lane: Hashable | None,
              pool: str | None = None) -> None:
    current = mode()
    if current == "celery":
        try:
            celery_app.send_task(task, args=list(args), countdown=countdown, retry=False)
        except Exception:  # kombu/redis raise several types for an unreachable broker
            if run_here and not queue_only:
                logger.warning("broker unreachable: running %s in this process", what, exc_info=True)
                submit_in_thread(fn, *args, what=what, lane=lane, pool=pool)
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
        submit_in_thread(fn, *args, what=what, once=once, lane=lane, pool=pool)
    else:
        fn(*args)


def submit_in_thread(fn: Callable[..., None], *args: Any, what: str, once: Hashable | None = None,
                     lane: Hashable | None = None, pool: str | None = None) -> None:
    """Run ``fn(*args)`` on the in-process background worker (thread mode), with a fresh DB connection.

    Crashes are logged as ``what`` (the job's own row already records a failure);
    ``wait_for_background_ingestion`` waits for every job submitted here. Jobs of one ``lane`` run in the
    order they came; lanes take turns (``_next_job``): a KB's first file waits for one job of each busy KB at most.
    """
    def run() -> None:
        if once is not None:
            with _waiting_lock:
                _waiting.discard(once)
        close_old_connections()
        try:
            fn(*args)
        except Stopping:
            logger.warning("background %s stopped: the process is shutting down", what)
        except Exception:  # logged; the job's row already carries the failure
            logger.exception("background %s crashed", what)
        finally:
            close_old_connections()

    if not _stopping.is_set():
        try:
            if pool is not None:
                future = _pool_executor(pool).submit(run)
            else:
                with _lanes_lock:
                    _lanes.setdefault(lane, deque()).append(run)
                # One turn on the worker per job: whichever lane's turn it is then runs.
                future = _thread_executor().submit(_next_job)
        except RuntimeError:  # shut down between the check and the submit (``stop``)
            pass
        else:
            _pending.add(future)
            future.add_done_callback(_pending.discard)
            return
    logger.warning("shutting down: background %s not started (left for the next start)", what)


def _next_job() -> None:
    """Run the first job of the lane whose turn it is: the one served longest ago (a new lane at once)."""
    global _turns
    with _lanes_lock:
        if not _lanes:  # dropped by ``stop``
            return
        lane = min(_lanes, key=lambda name: _last_turn.get(name, -1))  # ties: the lane that came first
        jobs = _lanes[lane]
        job = jobs.popleft()
        if not jobs:
            del _lanes[lane]
        _turns += 1
        _last_turn[lane] = _turns  # kept when the lane empties: coming back does not jump the line
    job()


def _thread_executor() -> ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        if _executor is None:
            # One worker: ingestion is CPU-bound (embedding) on a small machine and
            # must not starve the request threads.
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zhiku-ingest")
        return _executor


def _pool_executor(name: str) -> ThreadPoolExecutor:
    with _executor_lock:
        if name not in _pools:
            _pools[name] = ThreadPoolExecutor(max_workers=POOL_WORKERS, thread_name_prefix=f"zhiku-{name}")
        return _pools[name]


def wait_for_background_ingestion(timeout: float = 120.0) -> None:
    """Block until the in-process queue is empty (thread mode; used by commands and tests).

    Jobs queue more jobs (a finished ingestion schedules its KB's recalibration),
    so this waits until nothing is left, not only for what was queued at the call.
    """
    while _pending:
        for future in list(_pending):
            future.result(timeout=timeout)


# Before the interpreter joins the executors' threads at exit (concurrent.futures registers its own join the same
# way, earlier, and these run last-registered first): otherwise it would first run every queued job.
threading._register_atexit(stop)  # type: ignore[attr-defined]  # CPython's hook for exactly this, since 3.9
