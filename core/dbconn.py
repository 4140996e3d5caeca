"""Database connections of long-lived worker threads (the search pool, the chat's executor threads).

Such a thread has no request cycle, and Django's ``close_old_connections`` at each task's end would close a
connection opened under ``DB_CONN_MAX_AGE=0``, so every task paid for a new backend (docs/scaling.md). Here
a worker thread keeps its connection for ``ZHIKU_WORKER_CONN_MAX_AGE`` seconds; one that failed, was left in
a transaction or is past its age is closed as a request's end closes it (``close_if_unusable_or_obsolete``).
``close_worker_connections`` closes them all (tests call it before their database is flushed or dropped).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper

_lock = threading.Lock()
_kept: list[BaseDatabaseWrapper] = []  # each worker thread's connection wrapper, once it has opened one
_local = threading.local()


def in_kept_connection(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in this worker thread, its connection kept open for the next task."""
    connection = connections[DEFAULT_DB_ALIAS]  # this thread's wrapper (``django.db.connection`` is a proxy)
    connection.close_if_unusable_or_obsolete()
    try:
        return fn(*args, **kwargs)
    finally:
        raw = connection.connection
        if raw is not None and getattr(_local, "raw", None) is not raw:  # opened by this task
            _local.raw = raw
            connection.close_at = time.monotonic() + settings.ZHIKU_WORKER_CONN_MAX_AGE
            with _lock:
                if connection not in _kept:
                    _kept.append(connection)
        connection.close_if_unusable_or_obsolete()


def close_worker_connections() -> None:
    """Close every kept connection (their threads must be idle: a pool shut down, a test over)."""
    with _lock:
        wrappers = list(_kept)
        _kept.clear()
    for wrapper in wrappers:
        wrapper.inc_thread_sharing()
        try:
            wrapper.close()
        finally:
            wrapper.dec_thread_sharing()
