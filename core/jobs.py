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

Two classes of jobs (``after_commit``'s ``background``). A person's jobs (an upload, a retry, a restore) and
background jobs (the demo KB's files at start-up, documents queued again at start-up, a source's sync), each class
first come, first served. On the thread worker each class has a thread of its own: a person's jobs run at once in
the order they came; a background job starts only while none of a person's runs or waits, and a running one waits
at its next ``checkpoint`` (an ingestion's embedding batch, a recalibration's question) while one does. Under Celery
a background task is sent at ``BACKGROUND_PRIORITY``, behind every person's task waiting in the broker (one already
running goes on: a worker runs its task to the end). In sync mode a job runs inline, whichever its class. Either
way a person's upload overtakes the demo KB's queue, and a place shown in either queue never moves back
(knowledge.ingestion.queue; docs/ingestion.md, "Queue order").
"""
from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from celery import current_app as celery_app  # the project's app (config/celery.py), set as current when config is imported
from django.conf import settings
from django.db import close_old_connections, transaction

logger = logging.getLogger(__name__)

MODES = ("celery", "thread", "sync")
BACKGROUND_PRIORITY = 9
"""A background job's Celery priority; a person's has the default, 0, which Redis serves first."""

# The thread worker: one thread for a person's jobs (key False), one for background jobs (key True).
_executors: dict[bool, ThreadPoolExecutor] = {}
# Pools of their own (``after_commit``'s ``pool``): jobs that must not wait behind an ingestion (a chat bot's reply).
_pools: dict[str, ThreadPoolExecutor] = {}
POOL_WORKERS = 2
_executor_lock = threading.Lock()
_pending: set[Future[None]] = set()
# A person's jobs queued or running; background jobs wait while there is any (``_wait_for_people``).
_people = threading.Condition()
_people_open = 0
# Whether the job running on this thread is a background one (``checkpoint`` pauses only those).
_running = threading.local()
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


def checkpoint() -> float:
    """Between a long job's steps: ``raise_if_stopping``, and a background job waits here while a person's job runs
    or waits (thread mode), then goes on where it was. Call it where no transaction is open. Returns the seconds it
    waited (a stage's time without them is its work: ``knowledge.ingestion.queue`` reads paces from it)."""
    raise_if_stopping()
    if not getattr(_running, "background", False):
        return 0.0
    start = time.perf_counter()
    _wait_for_people()
    raise_if_stopping()
    return time.perf_counter() - start


def _wait_for_people() -> None:
    with _people:
        _people.wait_for(lambda: _people_open == 0 or _stopping.is_set())


def _person_done() -> None:
    global _people_open
    with _people:
        _people_open -= 1
        _people.notify_all()


def stop() -> None:
    """Refuse new jobs on this process's threads and drop the queued ones; running ones see ``stopping()``.

    Called once the interpreter begins to exit (registered below), before it joins the executors' threads; also
    callable by a server that stops on its own. Idempotent."""
    if _stopping.is_set():
        return
    _stopping.set()
    with _people:
        _people.notify_all()  # a background job waiting for a person's ends now
    with _executor_lock:
        executors = [*_executors.values(), *_pools.values()]
    dropped = len([f for f in list(_pending) if not f.running() and not f.done()])
    for executor in executors:
        executor.shutdown(wait=False, cancel_futures=True)
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
                 honour_queue_only: bool = True, background: bool = False, pool: str | None = None) -> None:
    """Run ``fn(*args)`` later (the Celery task named ``task`` runs the same), once the transaction commits.

    ``run_here_if_broker_down``: in Celery mode, a broker that cannot be reached makes this process's
    thread worker run the job (otherwise the failure is logged and the job's row waits for a sweeper).
    ``once``: in thread mode, a job already waiting under this key is not queued twice. ``countdown``:
    the Celery task waits that many seconds first. ``honour_queue_only`` false: ``queue_only`` does not apply.
    ``background``: the job waits while a person's jobs run or wait (thread mode), or goes to the broker at the lowest
    priority (Celery; see the module's docstring). ``pool``: in thread mode, the job runs on that pool's own
    threads, in the order it came (never behind an ingestion).
    """
    # A job that may run here (an ingestion) fails its caller: an unknown mode now, before the transaction
    # commits, and its own failure at the commit. Any other (a recalibration) never fails the caller: Django
    # logs the error and the caller's work stands.
    robust = not run_here_if_broker_down
    if not robust:
        mode()
    held = honour_queue_only and _queue_only.get()
    transaction.on_commit(lambda: _dispatch(task, fn, args, what=what, countdown=countdown, queue_only=held,
                                            run_here=run_here_if_broker_down, once=once, background=background,
                                            pool=pool),
                          robust=robust)


def _dispatch(task: str, fn: Callable[..., None], args: tuple[Any, ...], *, what: str, countdown: float | None,
              queue_only: bool, run_here: bool, once: Hashable | None, background: bool,
              pool: str | None = None) -> None:
    current = mode()
    if current == "celery":
        try:
            # Background work goes out at the lowest priority: Redis hands a worker the highest first
            # (kombu's priority_steps; with acks_late and a prefetch of 1 a worker holds no more than it runs).
            celery_app.send_task(task, args=list(args), countdown=countdown, retry=False,
                                 **({"priority": BACKGROUND_PRIORITY} if background else {}))
        except Exception:  # kombu/redis raise several types for an unreachable broker
            if run_here and not queue_only:
                logger.warning("broker unreachable: running %s in this process", what, exc_info=True)
                submit_in_thread(fn, *args, what=what, background=background, pool=pool)
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
        submit_in_thread(fn, *args, what=what, once=once, background=background, pool=pool)
    else:
        fn(*args)


def submit_in_thread(fn: Callable[..., None], *args: Any, what: str, once: Hashable | None = None,
                     background: bool = False, pool: str | None = None) -> None:
    """Run ``fn(*args)`` on the in-process background worker (thread mode), with a fresh DB connection.

    Crashes are logged as ``what`` (the job's own row already records a failure);
    ``wait_for_background_ingestion`` waits for every job submitted here. A person's jobs run in the order they
    came; ``background`` ones too, on their own thread, each started only while no person's job runs or waits.
    """
    global _people_open

    def run() -> None:
        if once is not None:
            with _waiting_lock:
                _waiting.discard(once)
        if background:
            _wait_for_people()
            if _stopping.is_set():
                logger.warning("shutting down: background %s not started (left for the next start)", what)
                return
        _running.background = background
        close_old_connections()
        try:
            fn(*args)
        except Stopping:
            logger.warning("background %s stopped: the process is shutting down", what)
        except Exception:  # logged; the job's row already carries the failure
            logger.exception("background %s crashed", what)
        finally:
            close_old_connections()
            _running.background = False
            if pool is None and not background:
                _person_done()

    if not _stopping.is_set():
        person = pool is None and not background
        if person:
            with _people:
                _people_open += 1
        try:
            future = _pool_executor(pool).submit(run) if pool is not None else _thread_executor(background).submit(run)
        except RuntimeError:  # shut down between the check and the submit (``stop``)
            if person:
                _person_done()
        else:
            _pending.add(future)
            future.add_done_callback(_pending.discard)
            return
    logger.warning("shutting down: background %s not started (left for the next start)", what)


def _thread_executor(background: bool) -> ThreadPoolExecutor:
    with _executor_lock:
        if background not in _executors:
            # One thread each: ingestion is CPU-bound (embedding) on a small machine and must not starve the
            # request threads; the background one pauses while a person's job runs (``checkpoint``).
            _executors[background] = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="zhiku-background" if background else "zhiku-ingest")
        return _executors[background]


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
