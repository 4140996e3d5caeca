"""A waiting document's place in the ingestion queue and its estimate (knowledge/ingestion/queue.py), and the API."""
from __future__ import annotations

import pytest
from django.utils import timezone

from knowledge.ingestion.queue import queue_places
from knowledge.ingestion.upload import UploadedItem, document_upload
from knowledge.models import Document, DocumentStatus


def _doc(kb, name: str, *, status=DocumentStatus.PENDING, size=1000, chunks=0, done=0, seconds=None, at=None,
         background=False):
    doc = Document.objects.create(kb=kb, source_name=name, doc_type="md", size=size, sha256=name, status=status,
                                  chunks_total=chunks, chunks_done=done, queued_at=at, queued_in_background=background,
                                  metadata={"timings_ms": {"parse": seconds * 200, "embed": seconds * 1000}} if seconds else {})
    return doc


@pytest.fixture
def two_kbs(alice, make_kb):
    """The demo KB's four files queued in the background at start-up, then a person's two uploads."""
    demo, mine = make_kb(alice, "demo"), make_kb(alice, "mine")
    # demo's pace: 10,000 bytes (100 chunks) embedded in 10 s, 2 s besides → 1,000 bytes a second (10 chunks a
    # second), 2 s a document.
    _doc(demo, "done.md", status=DocumentStatus.READY, size=10_000, chunks=100, done=100, seconds=10)
    start = timezone.now() - timezone.timedelta(minutes=5)
    waiting = [_doc(demo, f"d{i}.md", at=start + timezone.timedelta(seconds=i), background=True) for i in range(4)]
    mine_docs = [_doc(mine, f"m{i}.md", at=start + timezone.timedelta(seconds=10 + i)) for i in range(2)]
    return demo, mine, waiting, mine_docs


@pytest.mark.django_db
def test_in_thread_mode_a_persons_uploads_go_ahead_of_the_background_queue(settings, two_kbs):
    settings.ZHIKU_INGEST_MODE = "thread"
    demo, mine, waiting, mine_docs = two_kbs
    _doc(demo, "running.md", status=DocumentStatus.PROCESSING, size=10_000, chunks=100, done=40, background=True)
    places = queue_places(waiting + mine_docs)
    # 1,000 bytes → 2 s + 1 s each; a new KB borrows the site's pace (the same single document).
    assert [(places[d.pk].position, places[d.pk].ahead, places[d.pk].eta_seconds) for d in mine_docs] == \
        [(1, 0, pytest.approx(3.0)), (2, 1, pytest.approx(6.0))]  # the background run in flight pauses for them
    assert not any(places[d.pk].background for d in mine_docs)
    # The demo's files count their own queue, behind the run in flight (60 chunks left: 6 s) and the person's two.
    assert [places[d.pk].position for d in waiting] == [1, 2, 3, 4] and all(places[d.pk].background for d in waiting)
    assert places[waiting[0].pk].ahead == 3 and places[waiting[0].pk].eta_seconds == pytest.approx(6 + 6 + 3)
    assert places[waiting[3].pk].eta_seconds == pytest.approx(6 + 6 + 12)
    assert places[mine_docs[0].pk].chunks_per_second == pytest.approx(10.0)


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["thread", "celery", "sync"])
def test_a_place_never_moves_back_as_other_kbs_jobs_arrive_start_and_finish(mode, settings, alice, make_kb):
    """Issue 47: with KBs taking turns a person's file went 1 → 2 and 3 → 4 as the demo KB's turns came and went
    and other KBs' files arrived. Arrivals here take the real path (document_upload sets where each one queues)."""
    settings.ZHIKU_INGEST_MODE = mode
    demo, mine, theirs = make_kb(alice, "demo"), make_kb(alice, "mine"), make_kb(alice, "theirs")
    seen: dict[int, list[int]] = {}

    def upload(kb, names: list[str], **how) -> None:
        document_upload(kb=kb, items=[UploadedItem(n, f"# {n}\n\n{n} 的内容。\n".encode()) for n in names], **how)
        look()

    def look() -> None:
        pending = list(Document.objects.filter(status=DocumentStatus.PENDING))
        for pk, place in queue_places(pending).items():
            seen.setdefault(pk, []).append(place.position)

    def start_next(kb) -> None:  # the run in flight finishes, the KB's next file starts
        doc = Document.objects.filter(kb=kb, status=DocumentStatus.PENDING).order_by("queued_at", "pk").first()
        Document.objects.filter(status=DocumentStatus.PROCESSING).update(status=DocumentStatus.READY)
        Document.objects.filter(pk=doc.pk).update(status=DocumentStatus.PROCESSING)
        look()

    upload(demo, [f"d{i}.md" for i in range(6)], background=True)   # the demo KB, queued at start-up
    start_next(demo)
    upload(mine, [f"m{i}.md" for i in range(4)])                     # a person's four files
    upload(theirs, ["t0.md"])                                        # another person's, a moment later
    start_next(mine)
    upload(theirs, ["t1.md", "t2.md"])
    upload(demo, ["d6.md"], background=True)                         # a source sync's file, say
    for n, kb in enumerate((mine, mine, mine, theirs, demo, theirs, theirs, demo)):
        start_next(kb)
        upload(theirs, [f"late-{n}.md"])
    moved_back = {Document.objects.get(pk=pk).source_name: places for pk, places in seen.items()
                  if any(b > a for a, b in zip(places, places[1:], strict=False))}
    assert moved_back == {}
    assert len(seen) == 22 and max(len(places) for places in seen.values()) > 20  # the demo files, seen at each step


@pytest.mark.django_db
def test_under_celery_a_persons_uploads_go_first_but_wait_for_a_background_run_in_flight(settings, two_kbs):
    """Under Celery background tasks have the lowest priority (core.jobs): people's go first, but a worker runs the
    background task it holds to the end, so that one is ahead of everybody."""
    settings.ZHIKU_INGEST_MODE = "celery"
    demo, mine, waiting, mine_docs = two_kbs
    _doc(demo, "running.md", status=DocumentStatus.PROCESSING, size=10_000, chunks=100, done=40, background=True)
    places = queue_places(waiting + mine_docs)
    assert [(places[d.pk].position, places[d.pk].ahead, places[d.pk].eta_seconds) for d in mine_docs] == \
        [(1, 1, pytest.approx(6 + 3.0)), (2, 2, pytest.approx(6 + 6.0))]
    assert [places[d.pk].position for d in waiting] == [1, 2, 3, 4] and all(places[d.pk].background for d in waiting)
    assert places[waiting[0].pk].ahead == 3 and places[waiting[0].pk].eta_seconds == pytest.approx(6 + 6 + 3)


@pytest.mark.django_db
def test_in_sync_mode_what_start_up_left_waits_in_one_queue_first_come_first_served(settings, two_kbs):
    """Sync mode runs each job inline; only ``queue_only`` (start-up) leaves documents waiting, taken in order."""
    settings.ZHIKU_INGEST_MODE = "sync"
    demo, mine, waiting, mine_docs = two_kbs
    _doc(demo, "running.md", status=DocumentStatus.PROCESSING, size=10_000, chunks=100, done=40)  # 60% left: 6 s
    places = queue_places(waiting + mine_docs)
    assert [places[d.pk].position for d in waiting + mine_docs] == [1, 2, 3, 4, 5, 6]
    assert not any(p.background for p in places.values())
    assert places[waiting[0].pk].ahead == 1
    assert places[waiting[0].pk].eta_seconds == pytest.approx(9.0)
    assert places[mine_docs[1].pk].eta_seconds == pytest.approx(24.0)


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
    assert queues["m0.md"] == {"position": 1, "ahead": 0, "eta_seconds": 3, "chunks_per_second": 10.0, "background": False}
    one = client_for(alice).get(f"/api/kbs/{demo.pk}/documents/{waiting[0].pk}/").json()
    assert one["queue"] == {"position": 1, "ahead": 2, "eta_seconds": 9, "chunks_per_second": 10.0, "background": True}
    ready = client_for(alice).get(f"/api/kbs/{demo.pk}/documents/?status=ready").json()["results"]
    assert [d["queue"] for d in ready] == [None]


@pytest.mark.django_db
def test_at_start_up_each_waiting_document_goes_back_to_its_own_queue_in_its_order(settings, two_kbs, monkeypatch):
    """queue_pending (start-up): the demo KB's files stay background work and a person's upload left waiting by a
    killed server stays ahead of them, each queue in the order it had."""
    from knowledge.ingestion import recovery, run

    settings.ZHIKU_INGEST_MODE = "thread"
    demo, mine, waiting, mine_docs = two_kbs
    sent: list[tuple[int, bool]] = []
    original = run.enqueue_ingest
    monkeypatch.setattr(run, "enqueue_ingest", lambda pk, *, background=False: (sent.append((pk, background)),
                                                                                original(pk, background=background)))
    recovery.queue_pending()
    assert sent == [(d.pk, True) for d in waiting] + [(d.pk, False) for d in mine_docs]
    places = queue_places(waiting + mine_docs)
    assert [places[d.pk].position for d in mine_docs] == [1, 2]
    assert [(places[d.pk].position, places[d.pk].background) for d in waiting] == [(n, True) for n in (1, 2, 3, 4)]


@pytest.mark.django_db
def test_a_big_files_estimate_follows_its_bytes_and_a_few_small_files_borrow_the_sites_pace(settings, alice, make_kb):
    """Issue 47: the first estimates were 10 to 50 times too long. A person's first files are tiny (two short chunks
    each, the first of them waiting for the embedder behind the demo KB's batch), so a big file waiting behind them
    was priced at thousands of chunks at a crawl. Time follows bytes, and a KB with little behind it reads the
    site's recent documents too."""
    settings.ZHIKU_INGEST_MODE = "thread"
    demo, small = make_kb(alice, "demo"), make_kb(alice, "small")
    _doc(demo, "manual.md", status=DocumentStatus.READY, size=60_000, chunks=100, done=100, seconds=60)  # 12 s besides
    for name in ("a.md", "b.md"):  # 200 bytes, 2 chunks, 14 s of embedding (2.8 s besides) each
        _doc(small, name, status=DocumentStatus.READY, size=200, chunks=2, done=2, seconds=14)
    waiting = _doc(small, "big.md", size=20_000)
    place = queue_places([waiting])[waiting.pk]
    # Bytes a second from the file big enough to say (60,000 in 60 s), the other stages' seconds from all three.
    assert place.eta_seconds == pytest.approx((12 + 2.8 + 2.8) / 3 + 20_000 / 1_000)  # about 26 s, not 1,400
    Document.objects.filter(kb=demo).delete()  # only the small files left: their pace, for want of another
    assert queue_places([waiting])[waiting.pk].eta_seconds == pytest.approx(2.8 + 20_000 / (400 / 28))
    # One of them that waited for the embedder (200 bytes in 140 s) does not set the pace: the median file's does.
    for name in ("c.md", "d.md"):
        _doc(small, name, status=DocumentStatus.READY, size=200, chunks=2, done=2, seconds=14)
    _doc(small, "waited.md", status=DocumentStatus.READY, size=200, chunks=2, done=2, seconds=140)
    assert queue_places([waiting])[waiting.pk].eta_seconds == pytest.approx((4 * 2.8 + 28) / 5 + 20_000 / (200 / 14))
