"""One Redis namespace per installation (ZHIKU_REDIS_PREFIX).

Every key zhiku writes to Redis starts with the prefix: the Django cache (``KEY_PREFIX``), the BM25 L2 tier,
the search-result and query-embedding caches, the Celery broker (queue and kombu's ``global_keyprefix``) and
the channel layer. The default is derived from the database identity, so installations with different
databases sharing one Redis never meet, and the processes of one installation agree without configuration.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote

PREFIX_RE = re.compile(r"^[A-Za-z0-9_.:\-]{1,64}$")


def database_identity(db: Mapping[str, Any], *, embedded_data_dir: Path | None = None) -> str:
    """What identifies a database: the embedded server's data directory, else host, port and name.

    ``db`` is a Django DATABASES entry (what ``dj_database_url.parse`` returns). User,
    password and options are left out: they can change without the data changing.
    """
    name = str(db.get("NAME") or "")
    if embedded_data_dir is not None:
        return f"embedded\x00{Path(embedded_data_dir).resolve()}\x00{name}"
    host = db.get("HOST") or (db.get("OPTIONS") or {}).get("host") or ""  # ?host=/socket/dir puts it in OPTIONS
    host = unquote(str(host)).strip().lower() or "localhost"
    port = str(db.get("PORT") or "5432").strip()
    return f"{host}\x00{port}\x00{name}"


def default_prefix(db: Mapping[str, Any], *, embedded_data_dir: Path | None = None) -> str:
    """``zhiku:<12 hex digits>``: a short digest of the database identity."""
    digest = hashlib.sha256(database_identity(db, embedded_data_dir=embedded_data_dir).encode()).hexdigest()
    return f"zhiku:{digest[:12]}"


def validate_prefix(prefix: str) -> str:
    from django.core.exceptions import ImproperlyConfigured

    if not PREFIX_RE.match(prefix):
        raise ImproperlyConfigured(
            f"ZHIKU_REDIS_PREFIX must be 1-64 characters from A-Z a-z 0-9 _ . : - (got {prefix!r})."
        )
    return prefix


def key(prefix: str, *parts: object) -> str:
    """``<prefix>:<part>:<part>…``."""
    return ":".join([prefix, *(str(p) for p in parts)])


def celery_queue(prefix: str) -> str:
    """The installation's default Celery queue (also its exchange and routing key)."""
    return f"{prefix}:celery"


def celery_transport_options(prefix: str) -> dict[str, str]:
    """Kombu's Redis transport prefixes every key it touches (queues, bindings, unacked, pidbox, events)."""
    return {"global_keyprefix": f"{prefix}:"}


def channel_layer_prefix(prefix: str) -> str:
    """channels_redis ``prefix`` (its default is ``asgi``)."""
    return f"{prefix}:asgi"
