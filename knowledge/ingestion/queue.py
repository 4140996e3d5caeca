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

The estimate is the KB's own recent pace: over its last ``RECENT`` ready documents, bytes of text embedded a second
and the seconds a document costs besides (parse, chunking, keywords, the write; the stages' times,
``metadata["timings_ms"]``), topped up with the site's recent documents while the KB's hold under
``MIN_PACE_BYTES``. A waiting document's time is its size over the first plus the second; a document in flight
counts the share of its chunks it has left. A KB with no finished document yet borrows the site's pace; with none
anywhere there is no estimate (None). Measured against what happened: docs/ingestion.md, "Queue order".
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import median

from django.db.models import F, Window
from django.db.models.functions import Coalesce, RowNumber

from core import jobs
from knowledge.models import Document, DocumentStatus

RECENT = 20
"""Ready documents of a KB its pace is read from."""
SITE_RECENT = 100
"""Ready documents of the whole site, for a KB without enough of its own."""
MIN_PACE_BYTES = 32_000
"""A KB whose recent documents hold fewer bytes reads its pace with the site's too: a few small files (their
first batch waiting for the embedder behind another run's) say little about a big one's."""
MIN_DOC_BYTES = 2_000
"""Files this small say how long a call takes more than how fast text is embedded (``_pace``)."""
MAX_WAITING = 5000
"""Waiting documents read to place one (a bulk import beyond this is placed among the first ``MAX_WAITING``)."""


@dataclass(frozen=True)
class Pace:
    bytes_per_second: float
    """Embedding only: bytes of a document's text embedded a second (its cost grows with its text, not with its
    number of chunks; a file of one heading makes two tiny chunks)."""
    seconds_per_document: float
    """Everything else a document costs, whatever its size (parse, chunking, keywords, the write)."""
    chunks_per_byte: float
    """Only to state the pace in chunks a second (the API's ``chunks_per_second``)."""

    def seconds(self, *, size: int, left: float = 1.0) -> float:
        """A waiting document's time; one in flight (``left``: the share of its chunks still to embed) its rest."""
        if left < 1.0:
            return left * size / self.bytes_per_second
        return self.seconds_per_document + size / self.bytes_per_second

    @property
    def chunks_per_second(self) -> float:
        return self.bytes_per_second * self.chunks_per_byte


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
    """In the background queue: ``position`` counts that queue, people's uploads go first."""

    def payload(self) -> dict[str, float | int | bool | None]:
        eta = None if self.eta_seconds is None else round(self.eta_seconds)
        pace = None if self.chunks_per_second is None else round(self.chunks_per_second, 2)
        return {"position": self.position, "ahead": self.ahead, "eta_seconds": eta, "chunks_per_second": pace,
                "background": self.background}


Row = tuple[int, int, int, dict]  # a ready document: pk, chunks, size, metadata


def _pace(rows: Iterable[Row]) -> Pace | None:
    """The pace of ``rows``; bytes a second from those of at least ``MIN_DOC_BYTES`` where there are any (a small
    file's embedding is mostly the fixed cost of a call: measured, 135–220-byte files ran at a third of the pace
    of the 2–70 KB pages; docs/ingestion.md, "Queue order")."""
    measured = []
    for _, n, bytes_, metadata in rows:
        timings = {k: float(v) / 1000 for k, v in ((metadata or {}).get("timings_ms") or {}).items()
                   if isinstance(v, int | float)}
        embed = timings.get("embed", 0.0)
        if n > 0 and bytes_ > 0 and embed > 0:
            measured.append((n, bytes_, embed, sum(timings.values()) - embed))
    if not measured:
        return None
    big = [m for m in measured if m[1] >= MIN_DOC_BYTES]
    # Only small files: the median file's pace, as one whose first batch waited for the embedder behind another
    # run's (seconds for a few hundred bytes) would otherwise set the pace of every file after it.
    per_second = sum(m[1] for m in big) / sum(m[2] for m in big) if big else median(m[1] / m[2] for m in measured)
    chunks, size = sum(m[0] for m in measured), sum(m[1] for m in measured)
    return Pace(bytes_per_second=per_second,
                seconds_per_document=sum(m[3] for m in measured) / len(measured), chunks_per_byte=chunks / size)


def _paces(kb_ids: set[int]) -> tuple[dict[int, Pace], Pace | None]:
    """Each KB's pace from its last ``RECENT`` ready documents, all KBs in one statement, topped up with the site's
    last ``SITE_RECENT`` where they hold under ``MIN_PACE_BYTES``; the site's alone for a KB with none."""
    ready = Document.objects.filter(status=DocumentStatus.READY)
    recent = (ready.filter(kb_id__in=kb_ids)
              .annotate(recency=Window(RowNumber(), partition_by=F("kb_id"), order_by=F("updated_at").desc()))
              .filter(recency__lte=RECENT).values_list("kb_id", "pk", "chunks_total", "size", "metadata"))
    rows: dict[int, list[Row]] = defaultdict(list)
    for kb_id, *row in recent:
        rows[kb_id].append((row[0], row[1], row[2], row[3]))
    thin = {kb_id for kb_id in kb_ids if sum(row[2] for row in rows.get(kb_id, [])) < MIN_PACE_BYTES}
    site_rows: list[Row] = list(ready.order_by("-updated_at").values_list("pk", "chunks_total", "size", "metadata")
                                [:SITE_RECENT]) if thin else []
    by_kb: dict[int, Pace] = {}
    for kb_id in kb_ids:
        own = rows.get(kb_id, [])
        if not own:
            continue
        if kb_id in thin:
            seen = {row[0] for row in own}
            own = own + [row for row in site_rows if row[0] not in seen]
        if (pace := _pace(own)) is not None:
            by_kb[kb_id] = pace
    return by_kb, _pace(site_rows) if thin else None


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

    def seconds(kb_id: int, size: int, left: float = 1.0) -> float | None:
        pace = paces.get(kb_id, site)
        return None if pace is None else pace.seconds(size=size, left=left)

    # A person's document waits for the person's work (and under Celery a background run in flight); a background
    # one for all of it.
    people = [(pk, kb, size) for pk, kb, size, bg in waiting if not (two_queues and bg)]
    bulk = [(pk, kb, size) for pk, kb, size, bg in waiting if two_queues and bg]
    running = [(seconds(kb, size, (total - done) / total if total else 1.0), bool(two_queues and bg))
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
