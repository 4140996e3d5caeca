"""The keyword path's store: each KB's BM25 index in four tiers, kept up to date incrementally.

L0  a file per machine (``settings.ZHIKU_BM25_DIR``) that every process maps read-only
    (``knowledge.retrieval.bm25_file``): one copy in the page cache, whatever the worker count;
L1  this process's reference to its mapped index (or, with L0 off, the index itself);
L2  Redis: the compressed blob (``BM25Index.to_bytes``), with a TTL, shared across machines;
L3  the KB's BM25Index row: the same blob, with the version and time it was built.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import cast

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from knowledge.access import Restriction, scope_documents_q
from knowledge.models import BM25Index as BM25IndexRow
from knowledge.models import Chunk, DocumentStatus, KnowledgeBase
from knowledge.retrieval.analysis import get_analyzer
from knowledge.retrieval.bm25 import FORMAT_VERSION, BM25Index, IndexFormatError
from knowledge.retrieval.bm25_file import MachineCopies
from knowledge.retrieval.protocols import AccessScope, KBSearchConfig, KeywordUnavailable, SearchFilters
from knowledge.stores import binary_cursor, filters_q, redis_client

logger = logging.getLogger(__name__)


@dataclass
class _Cached:
    version: int
    fingerprint: str
    index: BM25Index
    kb_key: str = ""  # the KB's life it was made for (_Want.kb_key)


@dataclass(frozen=True)
class _Want:
    """The index a search needs: the KB's current version under its analyzer."""
    kb_id: int
    version: int
    fingerprint: str
    kb_key: str  # the KB's folder in L0: its id and creation time


class BM25IndexStore:
    """The KB's BM25 index in a per-machine mapped file (L0), this process (L1), Redis (L2) and its row (L3).

    Every tier is keyed by the KB version, so a copy made before any content
    change is noticed as stale (counting chunks would miss an edit). A missing
    version is taken from L0 if another process of the machine wrote it, else
    made once per machine under the KB's file lock: from L2, from L3, or brought
    up to date incrementally from the previous version (nothing is re-tokenized)
    under a PostgreSQL advisory lock shared by all machines; the result is written
    to L0, L2 and L3. While another thread or process holds a lock, a search
    waits up to ``stale_wait`` seconds, then serves the previous version if it
    holds one. Blobs and files are numpy arrays + JSON, never pickles.
    ``directory``: the L0 root (default ``settings.ZHIKU_BM25_DIR``; "" turns L0 off).
    """

    LOCK_NAMESPACE = 0x7A6B  # "zk": advisory-lock key space for BM25 builds
    l2_ttl = 24 * 3600
    # An incremental update re-reads the chunks modified since the stored index was built. A chunk is
    # stamped (updated_at) when it is saved but seen only once its transaction commits, which can be
    # later (waiting for the KB row an ingestion holds), and another host's clock may run behind: rows
    # stamped this long before the build began are re-read too. Re-reading an unchanged row changes nothing.
    modified_margin = timedelta(minutes=2)
    # How long a search that holds a previous version waits for another thread's or process's update before
    # serving that version. Serving it at once lost the keyword path for a replaced document: the old index's
    # hits are chunks no longer served (the load test saw it in 1 of 103 searches of a document replaced in a
    # loop). An incremental update takes well under this (docs/scaling.md).
    stale_wait = 3.0
    _poll = 0.05

    def __init__(self, directory: str | None = None) -> None:
        self._directory = directory
        self._l1: dict[int, _Cached] = {}
        self._locks: dict[int, threading.Lock] = {}
        self._guard = threading.Lock()
        self.last_source: dict[int, str] = {}  # kb id → "l0" | "l1" | "l2" | "l3" | "incremental" | "build" | "stale"

    # tiers ---------------------------------------------------------------
    def _redis(self):
        return redis_client()

    def _machine(self) -> MachineCopies | None:
        root = settings.ZHIKU_BM25_DIR if self._directory is None else self._directory
        return MachineCopies(root, settings.ZHIKU_REDIS_PREFIX) if root else None

    @staticmethod
    def _l2_key(kb_id: int, version: int, fingerprint: str) -> str:
        return f"{settings.ZHIKU_REDIS_PREFIX}:bm25:{kb_id}:{version}:{fingerprint}"

    def _l2_get(self, kb_id: int, version: int, fingerprint: str) -> BM25Index | None:
        client = self._redis()
        if client is None:
            return None
        try:
            blob = client.get(self._l2_key(kb_id, version, fingerprint))
        except Exception:  # noqa: BLE001 - Redis down or broken: L2 is a cache, go to L3
            return None
        if not blob:
            return None
        try:
            return BM25Index.from_bytes(blob)
        except IndexFormatError:
            return None

    def _l2_put(self, kb_id: int, version: int, fingerprint: str, blob: bytes) -> None:
        client = self._redis()
        if client is None:
            return
        try:
            client.set(self._l2_key(kb_id, version, fingerprint), blob, ex=self.l2_ttl)
        except Exception:  # noqa: BLE001 - a cache write that fails only costs a later miss
            logger.warning("could not write the BM25 index of KB %s to Redis", kb_id)

    def _lock_for(self, kb_id: int) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(kb_id, threading.Lock())

    def invalidate_local(self, kb_id: int | None = None) -> None:
        """Forget this process's references (L1); the machine's files stay."""
        if kb_id is None:
            self._l1.clear()
        else:
            self._l1.pop(kb_id, None)

    # main entry ----------------------------------------------------------
    def get_index(self, kb: KBSearchConfig) -> BM25Index:
        if kb.life:  # read with the KB's row by the caller, in this request: no query of its own
            version, life = kb.version, kb.life
        else:
            row = KnowledgeBase.objects.filter(pk=kb.kb_id).values_list("version", "created_at").first()
            if row is None:
                raise KeywordUnavailable("knowledge base is gone")
            version, life = row[0], life_of(row[1])
        want = _Want(kb.kb_id, version, get_analyzer(kb.analyzer).fingerprint, f"kb{kb.kb_id}-{life}")
        cached = self._current(want)
        if cached is not None:
            return cached
        stale = self._held(want)
        lock = self._lock_for(kb.kb_id)
        if stale is None:
            lock.acquire()
        elif not lock.acquire(timeout=self.stale_wait):
            self.last_source[kb.kb_id] = "stale"
            return stale.index  # another thread is still updating; serve the previous version
        try:
            cached = self._current(want)
            if cached is not None:
                return cached
            stale = self._held(want)
            index, source, version = self._fetch(want, stale)
            self.last_source[kb.kb_id] = source
            if source != "stale":
                self._l1[kb.kb_id] = _Cached(version, want.fingerprint, index, want.kb_key)
            return index
        except KeywordUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - search goes vector-only rather than failing
            logger.exception("BM25 index of KB %s unavailable", kb.kb_id)
            raise KeywordUnavailable(str(exc)) from exc
        finally:
            lock.release()

    def _held(self, want: _Want) -> _Cached | None:
        """This process's copy of the KB's index if it was made for the same KB (not one deleted and re-created)."""
        cached = self._l1.get(want.kb_id)
        return cached if cached is not None and cached.kb_key == want.kb_key else None

    def _current(self, want: _Want) -> BM25Index | None:
        """The copy held, if it is of the version wanted or a later one (a request's config may be a moment old)."""
        cached = self._held(want)
        if cached and cached.version >= want.version and cached.fingerprint == want.fingerprint:
            self.last_source[want.kb_id] = "l1"
            return cached.index
        return None

    def _fetch(self, want: _Want, stale: _Cached | None) -> tuple[BM25Index, str, int]:
        """(index, source, version): from L0, else made once on this machine (under its file lock) and published."""
        machine = self._machine()
        if machine is None:
            return self._make(want, stale, None)
        path = machine.path(want.kb_key, want.version, want.fingerprint)
        index = machine.open(path)
        if index is not None:
            return index, "l0", want.version
        with machine.lock(want.kb_key, self.stale_wait if stale is not None else None, self._poll) as held:
            if not held:
                kept = cast(_Cached, stale)  # not held: only with a timeout, which only a stale copy sets
                return kept.index, "stale", kept.version
            index = machine.open(path)  # another process of this machine may have just written it
            if index is not None:
                return index, "l0", want.version
            index, source, version = self._make(want, stale, machine)
            if source == "stale":
                return index, source, version
            try:
                published = machine.publish(index, want.kb_key, version, want.fingerprint)
                index = machine.open(published) or index  # serve the mapped copy: this process holds no other
            except OSError:
                logger.warning("could not write the BM25 index file of KB %s; serving it from memory", want.kb_id)
            return index, source, version

    def _make(self, want: _Want, stale: _Cached | None, machine: MachineCopies | None) -> tuple[BM25Index, str, int]:
        index = self._l2_get(want.kb_id, want.version, want.fingerprint)
        if index is not None:
            return index, "l2", want.version
        index, source, version = self._load_or_build(want, stale=stale, machine=machine)
        if index is None:
            kept = cast(_Cached, stale)  # no index: only when not waiting, which only a stale copy allows
            return kept.index, "stale", kept.version
        return index, source, version

    def _load_or_build(self, want: _Want, *, stale: _Cached | None, machine: MachineCopies | None):
        """L3 hit, or an incremental update of the previous version, or a full build; persists to L3 and L2.

        (index, source, version); (None, "stale", version) when another process held the
        advisory lock past ``stale_wait``.
        """
        kb_id, fingerprint = want.kb_id, want.fingerprint
        with transaction.atomic(), connection.cursor() as cur:
            if not self._advisory_lock(cur, kb_id, wait=stale is None):
                return None, "stale", want.version  # another process is still building: serve what we have
            row = BM25IndexRow.objects.filter(kb_id=kb_id).first()
            # Re-read the version under the lock: a build may have just finished.
            version = KnowledgeBase.objects.filter(pk=kb_id).values_list("version", flat=True).first() or want.version
            base: BM25Index | None = None
            base_built_at = None
            if row is not None and row.analyzer_fingerprint == fingerprint and row.format_version == FORMAT_VERSION:
                if row.kb_version == version:
                    try:
                        base = BM25Index.from_bytes(bytes(row.data))
                    except IndexFormatError:
                        base = None
                    else:
                        self._l2_put(kb_id, version, fingerprint, bytes(row.data))
                        return base, "l3", version
                # The row's version may be on this machine already, mapped: no blob to decode.
                base = machine.open(machine.path(want.kb_key, row.kb_version, fingerprint)) if machine else None
                if base is None:
                    try:
                        base = BM25Index.from_bytes(bytes(row.data))
                    except IndexFormatError:
                        base = None
                base_built_at = row.built_at if base is not None else None
            if base is None and stale is not None and stale.fingerprint == fingerprint:
                base = stale.index  # built_at unknown: diff on ids and all modified rows since the row's time
            index, source, blob = self._update(kb_id, base, base_built_at, version, fingerprint)
        self._l2_put(kb_id, version, fingerprint, blob)
        return index, source, version

    def _advisory_lock(self, cur, kb_id: int, *, wait: bool) -> bool:
        if wait:
            cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", [self.LOCK_NAMESPACE, kb_id])
            return True
        deadline = time.monotonic() + self.stale_wait
        while True:
            cur.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [self.LOCK_NAMESPACE, kb_id])
            if cur.fetchone()[0]:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(self._poll)

    def _update(self, kb_id: int, base: BM25Index | None, base_built_at, version: int, fingerprint: str):
        """The index of the serving chunks, from ``base`` plus the changes or built afresh; saved to L3."""
        started = timezone.now()
        serving = Chunk.objects.filter(kb_id=kb_id, enabled=True, document__status=DocumentStatus.READY)
        if base is not None and base_built_at is not None:
            rows = list(serving.values_list("id", "updated_at"))
            live = {i for i, _ in rows}
            indexed = set(base.ids.tolist())
            since = base_built_at - self.modified_margin
            modified = {i for i, u in rows if u >= since and i in indexed}
            removed = (indexed - live) | modified
            added_ids = (live - indexed) | modified
            tokens = dict(Chunk.objects.filter(pk__in=list(added_ids)).values_list("id", "tokens")) if added_ids else {}
            index = base.with_changes(remove_ids=removed, add_docs=[(i, tokens[i]) for i in sorted(added_ids) if i in tokens])
            source = "incremental"
        else:
            index = BM25Index.build(serving.order_by("id").values_list("id", "tokens").iterator(chunk_size=5000))
            source = "build"
        blob = index.to_bytes()
        BM25IndexRow.objects.update_or_create(kb_id=kb_id, defaults={
            "data": b"", "format_version": FORMAT_VERSION, "chunk_count": index.n_docs,
            "kb_version": version, "analyzer_fingerprint": fingerprint,
        })
        # The blob as a binary parameter: Django's client-side binding would spell it out in hex inside the SQL
        # text (three copies of a 207 MB blob at 1M chunks). In the same transaction as the row above.
        with binary_cursor() as cur:
            cur.execute(f"UPDATE {BM25IndexRow._meta.db_table} SET data = %s WHERE kb_id = %s", [blob, kb_id], binary=True)
        # built_at (auto_now) is the save time; stamp it with the start so rows
        # changed during the build count as modified next time.
        BM25IndexRow.objects.filter(kb_id=kb_id).update(built_at=started)
        return index, source, blob

    def allowed_ids(self, *, kb_id: int, filters: SearchFilters, scope: AccessScope) -> np.ndarray | None:
        """None when the caller may see every indexed chunk; else the ids allowed, from SQL."""
        restricted_exist = kb_id not in scope.full_access_kb_ids and Restriction.objects.filter(document__kb_id=kb_id).exists()
        if filters.empty and not restricted_exist:
            return None
        qs = Chunk.objects.filter(kb_id=kb_id, enabled=True, document__status=DocumentStatus.READY)
        qs = qs.filter(scope_documents_q(scope, kb_id)).filter(filters_q(filters))
        return np.fromiter(qs.values_list("id", flat=True), dtype=np.int64)


_keyword_store: BM25IndexStore | None = None
_store_lock = threading.Lock()


def life_of(created_at) -> str:
    """A KB's life in its keys (``KBSearchConfig.life``, the L0 folder): its creation time in microseconds."""
    return str(int(created_at.timestamp() * 1e6))


def keyword_store() -> BM25IndexStore:
    """The process-wide BM25 index store (its L1 lives as long as the process)."""
    global _keyword_store
    with _store_lock:
        if _keyword_store is None:
            _keyword_store = BM25IndexStore()
        return _keyword_store


def _seconds(call: Callable[[], object]) -> float:
    """Wall-clock seconds one call takes."""
    t = time.perf_counter()
    call()
    return time.perf_counter() - t


def index_load_timings(kb: KBSearchConfig) -> dict[str, float]:
    """Seconds to get the KB's index from each tier (for the benchmark): build, L3 row, L2 Redis, L0 file, L1."""
    import tempfile

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="zhiku-bm25-") as scratch:
        store = BM25IndexStore(directory="")  # L0 off: build, L3 and L2 timed as such
        BM25IndexRow.objects.filter(kb_id=kb.kb_id).delete()
        out["build"] = _seconds(lambda: store.get_index(kb))
        store.invalidate_local()
        client = store._redis()
        if client is not None:
            for key in client.scan_iter(f"{settings.ZHIKU_REDIS_PREFIX}:bm25:{kb.kb_id}:*"):
                client.delete(key)
        out["l3_postgres"] = _seconds(lambda: store.get_index(kb))
        if client is not None:
            store.invalidate_local()
            out["l2_redis"] = _seconds(lambda: store.get_index(kb))
        out["l1_memory"] = _seconds(lambda: store.get_index(kb))
        writer = BM25IndexStore(directory=scratch)
        out["l0_write"] = _seconds(lambda: writer.get_index(kb))
        reader = BM25IndexStore(directory=scratch)
        out["l0_map"] = _seconds(lambda: reader.get_index(kb))
    return out
