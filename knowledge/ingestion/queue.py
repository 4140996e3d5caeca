"""Where a waiting document stands: its place in the ingestion queue and when it should be ready.

The order is the one the workers take (``core.jobs``): in thread mode KBs take turns (each KB a lane, its own
documents first come, first served), so a document that is ``i``-th in its KB waits for its KB's ``i`` before it,
for ``i + 1`` of each KB whose turn comes before its own and ``i`` of the others (turns go by the first waiting
document, a KB with one in flight last); under Celery the broker's queue is first come, first served. Documents in
flight are ahead of every waiting one.

The estimate is the KB's own recent pace: over its last ``RECENT`` ready documents, chunks per stored byte and
chunks per second of ingestion (the stages' times, ``metadata["timings_ms"]``). A waiting document's chunks are its
size times the first, its time those chunks over the second; a document in flight counts the chunks it has left.
A KB with no finished document yet borrows the site's pace; with none anywhere there is no estimate (None).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db.models import F, Window
from django.db.models.functions import RowNumber

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

    def seconds(self, *, size: int, chunks_left: int | None = None) -> float:
        chunks = chunks_left if chunks_left is not None else size * self.chunks_per_byte
        return max(chunks, 1.0) / self.chunks_per_second


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

    def payload(self) -> dict[str, float | int | None]:
        eta = None if self.eta_seconds is None else round(self.eta_seconds)
        pace = None if self.chunks_per_second is None else round(self.chunks_per_second, 2)
        return {"position": self.position, "ahead": self.ahead, "eta_seconds": eta, "chunks_per_second": pace}


def _pace(rows: Iterable[tuple[int, int, dict]]) -> Pace | None:
    chunks = size = 0
    seconds = 0.0
    for n, bytes_, metadata in rows:
        timings = (metadata or {}).get("timings_ms") or {}
        spent = sum(float(v) for v in timings.values() if isinstance(v, int | float)) / 1000
        if n > 0 and bytes_ > 0 and spent > 0:
            chunks, size, seconds = chunks + n, size + bytes_, seconds + spent
    if not chunks:
        return None
    return Pace(chunks_per_byte=chunks / size, chunks_per_second=chunks / seconds)


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
    flight = list(Document.objects.filter(status=DocumentStatus.PROCESSING)
                  .values_list("pk", "kb_id", "size", "chunks_done", "chunks_total"))
    waiting = list(Document.objects.filter(status=DocumentStatus.PENDING).order_by("updated_at", "pk")
                   .values_list("pk", "kb_id", "size")[:MAX_WAITING])
    by_kb: dict[int, list[tuple[int, int]]] = defaultdict(list)  # KB → its waiting (pk, size), in order
    for pk, kb_id, size in waiting:
        by_kb[kb_id].append((pk, size))
    paces, site = _paces({kb for _, kb, *_ in flight} | set(by_kb))

    def seconds(kb_id: int, size: int, chunks_left: int | None = None) -> float | None:
        pace = paces.get(kb_id, site)
        return None if pace is None else pace.seconds(size=size, chunks_left=chunks_left)

    in_flight: list[float | None] = [seconds(kb, size, (total - done) if total else None)
                                     for _, kb, size, done, total in flight]
    index = {pk: (kb_id, i) for kb_id, rows in by_kb.items() for i, (pk, _) in enumerate(rows)}
    arrival = {pk: n for n, (pk, _, _) in enumerate(waiting)}
    busy = {kb for _, kb, *_ in flight}
    taking_turns = jobs.mode() == "thread"
    # Lanes in the order their turns come: by their first waiting document, a KB with one in flight last (its turn
    # has just been).
    rank = {kb: n for n, kb in enumerate(sorted(by_kb, key=lambda kb: (kb in busy, arrival[by_kb[kb][0][0]])))}
    places: dict[int, Place] = {}
    for doc in documents:
        if doc.pk not in index:
            continue
        kb_id, i = index[doc.pk]
        if taking_turns:
            before = [(kb, size) for kb, rows in by_kb.items() if kb != kb_id
                      for _, size in rows[: i + 1 if rank[kb] < rank[kb_id] else i]] + [(kb_id, s) for _, s in by_kb[kb_id][:i]]
        else:
            before = [(kb, size) for _, kb, size in waiting[: arrival[doc.pk]]]
        work = in_flight + [seconds(kb, size) for kb, size in before] + [seconds(kb_id, doc.size)]
        eta = None if any(w is None for w in work) else sum(w for w in work if w is not None)
        pace = paces.get(kb_id, site)
        places[doc.pk] = Place(position=len(before) + 1, ahead=len(before) + len(flight), eta_seconds=eta,
                               chunks_per_second=None if pace is None else pace.chunks_per_second)
    return places


def attach_places(documents: Sequence[Document] | None) -> None:
    """Set ``queue`` on each of ``documents`` (the API's ``DocumentOutput`` reads it): a ``Place`` or None."""
    if not documents:
        return
    places = queue_places(documents)
    for doc in documents:
        doc.queue = places.get(doc.pk)  # type: ignore[attr-defined]
