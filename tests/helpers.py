"""Helpers shared by test modules."""
from __future__ import annotations

import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[1]


def api_token(user, name: str = "test") -> str:
    """A new API token's key for ``user`` (keys are stored hashed: this is the only time it is known)."""
    from accounts.tokens import token_issue

    return token_issue(user=user, name=name)[1]


def redis_available(url: str) -> bool:
    """Whether the Redis server at ``url`` answers (``make test`` starts one)."""
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


@contextmanager
def celery_broker(url: str):
    """Point the Celery app at the broker ``url`` for the block, and back afterwards.

    The app caches its first connection pool and producer pool; without
    dropping them, tasks would still go to the broker an earlier test used.
    """
    from config.celery import app

    old = app.conf.broker_url

    def point(to: str) -> None:
        app.conf.broker_url = to
        app._pool = None
        app.amqp._producer_pool = None

    point(url)
    try:
        yield app
    finally:
        point(old)


def start_celery_worker(env: dict[str, str], log: Path, *, name: str | None = None, pool: str | None = None,
                        level: str = "INFO") -> subprocess.Popen:
    """A real ``celery worker`` (concurrency 1) in its own session, its output appended to ``log``."""
    args = [sys.executable, "-m", "celery", "-A", "config", "worker", "--concurrency", "1",
            "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", level]
    if name:
        args += ["-n", f"{name}@%h"]
    if pool:
        args += ["--pool", pool]
    with open(log, "ab") as out:
        return subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def wait_for(predicate, timeout: float, what: str, logs: list[Path] = ()):
    """``predicate()``'s first truthy value within ``timeout`` s, else an AssertionError ending with the logs' tails."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    tails = "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}" for log in logs if log.exists())
    raise AssertionError(f"{what} within {timeout} s\n{tails}")


def set_lines(kb, gate: float, line: float) -> None:
    """Put ``kb``'s not-found gate and confidence line at these values (a queryset update: no version bump).

    Gate 0 and line 0 make every search answered, line 1 every search uncertain, gate 1 every search not found.
    """
    from knowledge.models import KnowledgeBase

    KnowledgeBase.objects.filter(pk=kb.pk).update(score_threshold=gate, answer_threshold=line)


def document_with_chunk(kb, name: str, groups=()):
    """A ready document ``name`` in ``kb`` holding one chunk (its text the name), restricted to ``groups``."""
    from knowledge.models import Chunk, Document

    document = Document.objects.create(kb=kb, source_name=name, doc_type="md", sha256=name, status="ready")
    Chunk.objects.create(document=document, kb=kb, ordinal=0, content=name, enriched=name, content_hash=name)
    document.restricted_to_groups.set(groups)
    return document


def _status_mib(key: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    raise KeyError(key)


@contextmanager
def peak_growth():
    """How far this process's resident memory rose above where it was, at its peak within the block (MiB):
    ``grown["mib"]`` once the block ends (Linux: VmHWM, reset through /proc/self/clear_refs)."""
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # reset VmHWM (the peak) to the current resident size
    before = _status_mib("VmRSS")
    grown = {}
    yield grown
    grown["mib"] = _status_mib("VmHWM") - before


def searched(*, user, query: str, kb_ids=(), kbs=(), scope=None, **options):
    """``knowledge.services.search.search`` as a test asks it: the question and the request's options by keyword."""
    from knowledge.retrieval.request import SearchRequest
    from knowledge.services.search import Search, search

    return search(Search(SearchRequest(query=query, **options), user=user, kb_ids=kb_ids, kbs=kbs, scope=scope))


def first_party_packages() -> tuple[str, ...]:
    """Every app of the tree: the import contracts' root packages (pyproject.toml), so no check leaves one out."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return tuple(config["tool"]["importlinter"]["root_packages"])
