"""One-minute request counters for API keys (assistants/keys.py) and visitors (assistants/visitors.py).

Fixed windows counted in Redis when there is one (shared by every worker; the key expires after two minutes),
else in this process.
"""
from __future__ import annotations

import threading

from django.conf import settings

from core import redis_namespace
from knowledge.stores import redis_client

_local_lock = threading.Lock()
_local_windows: dict[tuple[str, str, int], int] = {}


def minute_count(kind: str, name: object, window: int) -> int:
    """Count one request of ``name`` (within ``kind``) in minute ``window``; the count so far, this one included."""
    client = redis_client()
    if client is not None:
        key = redis_namespace.key(settings.ZHIKU_REDIS_PREFIX, kind, name, window)
        try:
            pipe = client.pipeline()
            pipe.incr(key)
            pipe.expire(key, 120)
            return int(pipe.execute()[0])
        except Exception:  # noqa: BLE001 - an unreachable Redis falls back to this process's count
            pass
    slot = (kind, str(name), window)
    with _local_lock:
        for stale in [k for k in _local_windows if k[2] < window]:
            del _local_windows[stale]
        _local_windows[slot] = _local_windows.get(slot, 0) + 1
        return _local_windows[slot]


def reset_local() -> None:
    """Forget this process's counts (tests that run without Redis)."""
    with _local_lock:
        _local_windows.clear()
