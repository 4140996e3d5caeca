"""Where a waiting document stands: its place in the ingestion queue and when it should be ready.

The order is the one the workers take (``core.jobs``): two queues, each first come, first served (by
``Document.queued_at``): a person's uploads, and behind them background work (the demo KB, documents queued again at
start-up, source syncs). A person's document waits for the documents in flight and the person's queued before it,
but in thread mode not for a background one in flight, which pauses at its next batch while a person's job runs or
waits (under Celery a worker runs its task to the end). A background document waits for every document in flight,
every person's waiting one and the background ones before it. Its ``position`` counts only its own queue, so a
place never moves back: whatever arrives later queues behind it, or (a person's upload) in the queue in front, which
``ahead`` and the estimate count but the position does not. In sync mode nothing waits but what ``queue_only`` left
(start-up), in one queue in the order it came.

The estimate is the KB's own recent pace: over its last ``RECENT`` ready documents, chunks per stored byte, chunks
per second of embedding and the seconds a document costs besides (parse, chunking, keywords, the write; the stages'
times, ``metadata["timings_ms"]``). A waiting document's chunks are its size times the first, its time those chunks
over the second plus the third; a document in flight counts the chunks it has left. A KB with no finished document
yet borrows the site's pace; with none anywhere there is no estimate (None). Measured against what happened:
docs/ingestion.md, "Queue order".
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db.models import F, Window
from django.db.models.functions import Coalesce, RowNumber

from core import jobs
from knowledge.models import Document, DocumentStatus

RECENT = 20
"""Ready documents of a KB its pace is read from."""
SITE_RECENT = 100
"""Ready documents of the whole site, for a KB without any."""
MAX_WAITING = 5000
"""Waiting documents read to place one (a bulk import beyond this is placed among the first ``MAX_WAITING``)."""


@dataclass(frozen=True)
class Pace:
    chunks_per_byte: float
    chunks_per_second: float
    """Embedding only."""
    seconds_per_document: float
    """Everything else a document costs, whatever its size."""

    def seconds(self, *, size: int, chunks_left: int | None = None) -> float:
        if chunks_left is not None:  # in flight: parsed already, its chunks being embedded
            return chunks_left / self.chunks_per_second
        return self.seconds_per_document + max(size * self.chunks_per_byte, 1.0) / self.chunks_per_second


@dataclass(frozen=True)
class Place:
    position: int
    """1: next to start."""
    ahead: int
    """Documents that start or finish before this one (those in flight included)."""
    eta_seconds: float | None
    """Seconds until it should be ready (its own ingestion included); None before any document was ingested."""
    chunks_per_second: float | None
    """The pace the estimate used (its KB's, else the site's)."""
    background: bool = False
    """In the background queue (thread mode): ``position`` counts that queue, people's uploads go first."""

    def payload(self) -> dict[str, float | int | bool | None]:
        eta = None if self.eta_seconds is None else round(self.eta_seconds)
        pace = None if self.chunks_per_second is None else round(self.chunks_per_second, 2)
        return {"position": self.position, "ahead": self.ahead, "eta_seconds": eta, "chunks_per_second": pace,
                "background": self.background}


def _pace(rows: Iterable[tuple[int, int, dict]]) -> Pace | None:
    chunks = size = documents = 0
    embedding = other = 0.0
    for n, bytes_, metadata in rows:
        timings = {k: float(v) / 1000 for k, v in ((metadata or {}).get("timings_ms") or {}).items()
                   if isinstance(v, int | float)}
        embed = timings.get("embed", 0.0)
        if n > 0 and bytes_ > 0 and embed > 0:
            chunks, size, documents = chunks + n, size + bytes_, documents + 1
            embedding, other = embedding + embed, other + sum(timings.values()) - embed
    if not chunks:
        return None
    return Pace(chunks_per_byte=chunks / size, chunks_per_second=chunks / embedding, seconds_per_document=other / documents)


def _paces(kb_ids: set[int]) -> tuple[dict[int, Pace], Pace | None]:
    """Each KB's pace from its last ``RECENT`` ready documents, all KBs in one statement; the site's when one lacks it."""
    ready = Document.objects.filter(status=DocumentStatus.READY)
    recent = (ready.filter(kb_id__in=kb_ids)
              .annotate(recency=Window(RowNumber(), partition_by=F("kb_id"), order_by=F("updated_at").desc()))
              .filter(recency__lte=RECENT).values_list("kb_id", "chunks_total", "size", "metadata"))
    rows: dict[int, list[tuple[int, int, dict]]] = defaultdict(list)
    for kb_id, *row in recent:
        rows[kb_id].append((row[0], row[1], row[2]))
    by_kb = {kb_id: pace for kb_id, kb_rows in rows.items() if (pace := _pace(kb_rows)) is not None}
    site = None if len(by_kb) == len(kb_ids) else _pace(
        ready.order_by("-updated_at").values_list("chunks_total", "size", "metadata")[:SITE_RECENT])
    return by_kb, site


def queue_places(documents: Sequence[Document]) -> dict[int, Place]:
    """The place of each waiting (``pending``) document among ``documents``; the others have none."""
    if not any(d.status == DocumentStatus.PENDING for d in documents):
        return {}
    mode = jobs.mode()
    two_queues, pausing = mode in ("thread", "celery"), mode == "thread"
    arrival = Coalesce("queued_at", "updated_at")  # queued_at: set by every enqueue since it exists
    flight = list(Document.objects.filter(status=DocumentStatus.PROCESSING)
                  .values_list("pk", "kb_id", "size", "chunks_done", "chunks_total", "queued_in_background"))
    waiting = list(Document.objects.filter(status=DocumentStatus.PENDING).order_by(arrival, "pk")
                   .values_list("pk", "kb_id", "size", "queued_in_background")[:MAX_WAITING])
    paces, site = _paces({row[1] for row in flight} | {row[1] for row in waiting})

    def seconds(kb_id: int, size: int, chunks_left: int | None = None) -> float | None:
        pace = paces.get(kb_id, site)
        return None if pace is None else pace.seconds(size=size, chunks_left=chunks_left)

    # A person's document waits for the person's work (and under Celery a background run in flight); a background
    # one for all of it.
    people = [(pk, kb, size) for pk, kb, size, bg in waiting if not (two_queues and bg)]
    bulk = [(pk, kb, size) for pk, kb, size, bg in waiting if two_queues and bg]
    running = [(seconds(kb, size, (total - done) if total else None), bool(two_queues and bg))
               for _, kb, size, done, total, bg in flight]
    queues = {pk: (False, i) for i, (pk, _, _) in enumerate(people)} | {pk: (True, j) for j, (pk, _, _) in enumerate(bulk)}
    places: dict[int, Place] = {}
    for doc in documents:
        if doc.pk not in queues:
            continue
        background, i = queues[doc.pk]
        before = people + bulk[:i] if background else people[:i]
        ahead_now = [w for w, bg in running if background or not (bg and pausing)]  # thread mode: it pauses
        work = ahead_now + [seconds(kb, size) for _, kb, size in before] + [seconds(doc.kb_id, doc.size)]
        eta = None if any(w is None for w in work) else sum(w for w in work if w is not None)
        pace = paces.get(doc.kb_id, site)
        places[doc.pk] = Place(position=i + 1, ahead=len(before) + len(ahead_now), eta_seconds=eta,
                               chunks_per_second=None if pace is None else pace.chunks_per_second, background=background)
    return places


def attach_places(documents: Sequence[Document] | None) -> None:
    """Set ``queue`` on each of ``documents`` (the API's ``DocumentOutput`` reads it): a ``Place`` or None."""
    if not documents:
        return
    places = queue_places(documents)
    for doc in documents:
        doc.queue = places.get(doc.pk)  # type: ignore[attr-defined]
