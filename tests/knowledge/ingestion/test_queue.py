"""A waiting document's place in the ingestion queue and its estimate (knowledge/ingestion/queue.py), and the API."""
from __future__ import annotations

import pytest
from django.utils import timezone

from knowledge.ingestion.queue import queue_places
from knowledge.models import Document, DocumentStatus


def _doc(kb, name: str, *, status=DocumentStatus.PENDING, size=1000, chunks=0, done=0, seconds=None, at=None):
    doc = Document.objects.create(kb=kb, source_name=name, doc_type="md", size=size, sha256=name, status=status,
                                  chunks_total=chunks, chunks_done=done,
                                  metadata={"timings_ms": {"parse": seconds * 400, "embed": seconds * 600}} if seconds else {})
    if at is not None:
        Document.objects.filter(pk=doc.pk).update(updated_at=at)
    return doc


@pytest.fixture
def two_kbs(alice, make_kb):
    demo, mine = make_kb(alice, "demo"), make_kb(alice, "mine")
    # demo's pace: 100 chunks from 10,000 bytes in 10 s → 0.01 chunks per byte, 10 chunks/s.
    _doc(demo, "done.md", status=DocumentStatus.READY, size=10_000, chunks=100, done=100, seconds=10)
    start = timezone.now() - timezone.timedelta(minutes=5)
    waiting = [_doc(demo, f"d{i}.md", at=start + timezone.timedelta(seconds=i)) for i in range(4)]
    mine_docs = [_doc(mine, f"m{i}.md", at=start + timezone.timedelta(seconds=10 + i)) for i in range(2)]
    return demo, mine, waiting, mine_docs


@pytest.mark.django_db
def test_in_thread_mode_kbs_take_turns_and_the_estimate_reads_the_pace(settings, two_kbs):
    settings.ZHIKU_INGEST_MODE = "thread"
    demo, mine, waiting, mine_docs = two_kbs
    places = queue_places(waiting + mine_docs)
    assert [places[d.pk].position for d in waiting] == [1, 3, 5, 6]
    assert [places[d.pk].position for d in mine_docs] == [2, 4]  # behind one demo file, not four
    # 1,000 bytes → 10 chunks → 1 s each at demo's pace; a new KB borrows the site's (the same single document).
    assert places[mine_docs[0].pk].eta_seconds == pytest.approx(2.0)
    assert places[waiting[3].pk].eta_seconds == pytest.approx(6.0)
    assert places[mine_docs[0].pk].chunks_per_second == pytest.approx(10.0)


@pytest.mark.django_db
def test_under_celery_the_queue_is_first_come_first_served_and_a_running_document_is_ahead(settings, two_kbs):
    settings.ZHIKU_INGEST_MODE = "celery"
    demo, mine, waiting, mine_docs = two_kbs
    _doc(demo, "running.md", status=DocumentStatus.PROCESSING, size=50_000, chunks=100, done=40)  # 60 chunks left: 6 s
    places = queue_places(waiting + mine_docs)
    assert [places[d.pk].position for d in waiting + mine_docs] == [1, 2, 3, 4, 5, 6]
    assert places[waiting[0].pk].ahead == 1
    assert places[waiting[0].pk].eta_seconds == pytest.approx(7.0)
    assert places[mine_docs[1].pk].eta_seconds == pytest.approx(12.0)


@pytest.mark.django_db
def test_without_any_finished_document_there_is_a_place_but_no_estimate(alice, make_kb):
    kb = make_kb(alice, "new")
    doc = _doc(kb, "a.md")
    place = queue_places([doc])[doc.pk]
    assert (place.position, place.eta_seconds, place.chunks_per_second) == (1, None, None)
    assert queue_places([_doc(kb, "ready.md", status=DocumentStatus.READY, chunks=3, done=3, seconds=1)]) == {}


@pytest.mark.django_db
def test_the_documents_api_shows_each_waiting_documents_place(client_for, alice, settings, two_kbs):
    settings.ZHIKU_INGEST_MODE = "thread"
    demo, mine, waiting, mine_docs = two_kbs
    body = client_for(alice).get(f"/api/kbs/{mine.pk}/documents/").json()
    queues = {d["source_name"]: d["queue"] for d in body["results"]}
    assert queues["m0.md"] == {"position": 2, "ahead": 1, "eta_seconds": 2, "chunks_per_second": 10.0}
    one = client_for(alice).get(f"/api/kbs/{demo.pk}/documents/{waiting[0].pk}/").json()
    assert one["queue"]["position"] == 1
    ready = client_for(alice).get(f"/api/kbs/{demo.pk}/documents/?status=ready").json()["results"]
    assert [d["queue"] for d in ready] == [None]
