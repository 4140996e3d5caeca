"""Shared fixtures: the real embedded PostgreSQL (pgvector), real Redis where a test asks, real models."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from django.db.backends.postgresql.operations import DatabaseOperations

# The message catalogues (.mo) are built, not committed: compile any .po newer than its .mo, as `make migrate` does.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import compile_messages  # noqa: E402 - importable only once scripts/ is on sys.path (the line above)

if compile_messages.compile_all(quiet=True):
    # Django may have read the old catalogues while it was set up (before this file): forget them.
    import gettext as _gettext_module

    from django.utils.translation import trans_real

    _gettext_module._translations.clear()
    trans_real._translations = {}
    trans_real._default = None
sys.path.pop(0)

os.environ.setdefault("ZHIKU_INGEST_MODE", "sync")
# No sweeper thread in the test process (an in-process Celery test worker would start one);
# tests/knowledge/ingestion/test_recovery.py calls the sweep directly and gives its worker processes their own.
os.environ.setdefault("ZHIKU_SWEEP_SECONDS", "0")

# The BM25 index files (the L0 tier) of the processes a test starts (searchers, servers, Celery workers):
# this session's own folder, so they never map a file another run wrote for other content.
if "ZHIKU_BM25_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    os.environ["ZHIKU_BM25_DIR"] = tempfile.mkdtemp(prefix="zhiku-test-bm25-")
    atexit.register(shutil.rmtree, os.environ["ZHIKU_BM25_DIR"], True)


# The audit table refuses TRUNCATE (audit/migrations/0002_append_only.py), and a transactional test's teardown
# empties every table with one TRUNCATE: for that statement only, and only in the test database, the trigger
# is switched off inside the flush's own transaction.
_sql_flush = DatabaseOperations.sql_flush


def _sql_flush_with_audit(self, style, tables, *, reset_sequences=False, allow_cascade=False):
    statements = _sql_flush(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
    if statements and "audit_auditentry" in tables:
        toggle = "ALTER TABLE audit_auditentry {} TRIGGER audit_entry_no_truncate;"
        return [toggle.format("DISABLE"), *statements, toggle.format("ENABLE")]
    return statements


DatabaseOperations.sql_flush = _sql_flush_with_audit

# The daphne server and headless Chromium fixtures of the browser tests; the fake LLM and memoised passage vectors
# of the chat and assistant tests (their conftests make the last two autouse).
pytest_plugins = ["tests.browser", "tests.llm_fixtures"]


@pytest.fixture(autouse=True)
def _search_pool_closed():
    """A test that used the search pool or the chat's executor threads leaves none of their kept connections
    open (core/dbconn.py; one would block the test database's drop)."""
    yield
    from knowledge.services.search import close_search_pool

    close_search_pool()


@pytest.fixture(autouse=True)
def _media_and_mode(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.ZHIKU_INGEST_MODE = "sync"
    settings.ZHIKU_BM25_DIR = str(tmp_path / "bm25")  # this test's machine: no index file from another test
    settings.ZHIKU_SWEEP_SECONDS = 0
    # Recalibration after every ingestion would slow the suite; tests/knowledge/services/test_calibration.py turns it on.
    settings.ZHIKU_AUTO_CALIBRATE = False
    # Search paths run in the calling thread, which sees the test's transaction.
    settings.ZHIKU_SEARCH_WORKERS = 1
    import knowledge.services.search as search_service

    search_service._retriever = None
    search_service._embedders.clear()
    # Full-strength hashing costs ~0.2 s a user and buys nothing in tests.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": str(tmp_path)}}


@pytest.fixture
def make_user(db, django_user_model):
    def make(username: str, *, superuser: bool = False, groups=()):
        user = django_user_model.objects.create_user(username=username, password="pw-" + username,
                                                     is_superuser=superuser, is_staff=superuser)
        for g in groups:
            user.groups.add(g)
        return user

    return make


@pytest.fixture
def alice(make_user):
    return make_user("alice")


@pytest.fixture
def bob(make_user):
    return make_user("bob")


@pytest.fixture
def make_kb(db):
    from knowledge.services.kbs import kb_create

    def make(owner, name: str = "kb", **values):
        return kb_create(owner=owner, name=name, **values)

    return make


@pytest.fixture
def kb(make_kb, alice):
    return make_kb(alice, "Alice KB")


@pytest.fixture
def ingest(django_capture_on_commit_callbacks):
    """Upload files through the service and run their ingestion now (on commit, as in production)."""
    from knowledge.ingestion.upload import UploadedItem, document_upload
    from knowledge.models import DocumentAlias

    def run(kb, files: dict[str, bytes | str], user=None):
        items = [UploadedItem(name=n, data=d.encode() if isinstance(d, str) else d) for n, d in files.items()]
        with django_capture_on_commit_callbacks(execute=True):
            outcomes = document_upload(kb=kb, items=items, user=user)
        for o in outcomes:
            # A new version is folded into its document when ready: its row's id is then an alias of the document's.
            moved = DocumentAlias.objects.filter(old_id=o.document.pk).values_list("document_id", flat=True).first()
            if moved is not None:
                o.document.pk = moved
            o.document.refresh_from_db()
        return [o.document for o in outcomes]

    return run


@pytest.fixture
def api_client():
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture
def client_for(db):
    """An APIClient authenticated with an API token of the user's (one token per user and test)."""
    from rest_framework.test import APIClient

    from tests.helpers import api_token

    keys: dict[int, str] = {}

    def make(user):
        if user.pk not in keys:
            keys[user.pk] = api_token(user)
        c = APIClient()
        c.credentials(HTTP_AUTHORIZATION=f"Token {keys[user.pk]}")
        return c

    return make



# With `make test` the suite runs on every core (pytest-xdist, `--dist loadgroup`). Each worker has its own
# test database (pytest-django's `_gw<N>` suffix), its own tmp_path and media, and the servers it starts take
# free ports. The files below share fixed Redis databases (11-14) and flush them, so they run one after the
# other on one worker.
SHARED_REDIS_FILES = {
    "tests/config/test_cluster.py",
    "tests/config/test_startup.py",
    "tests/knowledge/test_access.py",
    "tests/knowledge/ingestion/test_background.py",
    "tests/knowledge/ingestion/test_recovery.py",
    "tests/core/test_redis_namespace.py",
    "tests/knowledge/services/test_search.py",
}


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` as a scheduler of test ids: the shared-Redis files are one unit, every other test its own.

    (xdist's own loadgroup renames each marked test's id, which pytest 9.2 no longer lets a plugin do.)
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedRedisScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "shared-redis" if nodeid.split("::", 1)[0] in SHARED_REDIS_FILES else nodeid

    return SharedRedisScheduling(config, log)


@pytest.fixture
def judge_only(settings):
    """The reader off (``ZHIKU_READER=false``): for tests of what the judge's two lines decide, the behaviour the reader
    leaves as it was when off (tests/knowledge/reader/ test the reader's own decisions)."""
    settings.ZHIKU_READER = False
