"""Django implementations of the retrieval core's stores: pgvector search, BM25 index tiers, chunk loading."""
from __future__ import annotations

import functools
import json
import logging
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Sequence

import numpy as np
import psycopg
from django.conf import settings
from django.db import connection, transaction
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL
from django.utils import timezone
from pgvector.psycopg.vector import register_vector_info
from psycopg.types import TypeInfo

from knowledge.access import Restriction, scope_chunks_sql, scope_documents_q, scope_documents_sql
from knowledge.models import BM25Index as BM25IndexRow
from knowledge.models import Chunk, Document, DocumentStatus, KnowledgeBase
from knowledge.retrieval.bm25 import FORMAT_VERSION, BM25Index, IndexFormatError
from knowledge.retrieval.analysis import get_analyzer
from knowledge.retrieval.evidence import faq_cosine
from knowledge.retrieval.protocols import AccessScope, ChunkRecord, KBSearchConfig, KeywordUnavailable, SearchFilters

logger = logging.getLogger(__name__)


def redis_client():
    """The raw Redis client of the default cache (bytes in, bytes out: nothing pickled), or None without Redis."""
    if not settings.REDIS_URL:
        return None
    try:
        from django_redis import get_redis_connection

        return get_redis_connection("default")
    except Exception:  # noqa: BLE001 - Redis tiers are optimisations; their absence is not an error
        return None


# --- filter conditions (the permission conditions are knowledge.access) ----------------

def _metadata_sql(chunk: str, document: str) -> str:
    """Every (key, value) of a metadata filter holds in the chunk's or the document's metadata, as text.

    The whole filter is one jsonb parameter that PostgreSQL unnests per row, so the statement
    has the same size whatever the filter holds and the work is linear in it; a condition per
    key made a statement, and a plan, as large as the filter (1,000 keys cost seconds).
    """
    return (f"NOT EXISTS (SELECT 1 FROM jsonb_each_text(%s::jsonb) AS wanted(key, value)"
            f" WHERE ({chunk}.metadata ->> wanted.key) IS DISTINCT FROM wanted.value"
            f" AND ({document}.metadata ->> wanted.key) IS DISTINCT FROM wanted.value)")


def _metadata_param(filters: SearchFilters) -> str:
    return json.dumps(dict(filters.metadata), ensure_ascii=False)


def _filters_sql(filters: SearchFilters, params: list) -> str:
    parts = []
    if filters.document_ids:
        parts.append("d.id = ANY(%s)")
        params.append(list(filters.document_ids))
    if filters.source_names:
        parts.append("d.source_name = ANY(%s)")
        params.append(list(filters.source_names))
    if filters.chunk_types:
        parts.append("c.chunk_type = ANY(%s)")
        params.append(list(filters.chunk_types))
    if filters.metadata:
        parts.append(_metadata_sql("c", "d"))
        params.append(_metadata_param(filters))
    return " AND ".join(parts) if parts else "TRUE"


def _filters_q(filters: SearchFilters) -> Q:
    """The same conditions for a queryset of chunks joined to their documents (``document__...``)."""
    q = Q()
    if filters.document_ids:
        q &= Q(document_id__in=filters.document_ids)
    if filters.source_names:
        q &= Q(document__source_name__in=filters.source_names)
    if filters.chunk_types:
        q &= Q(chunk_type__in=filters.chunk_types)
    if filters.metadata:
        quote = connection.ops.quote_name
        # The queryset's own tables: the chunk's, and the document's as its first (only) join names it.
        sql = _metadata_sql(quote(Chunk._meta.db_table), quote(Document._meta.db_table))
        q &= Q(RawSQL(sql, [_metadata_param(filters)], output_field=BooleanField()))
    return q


# --- raw statements: server-side binding, vectors in binary --------------------------------

_vector_types: dict[tuple, TypeInfo] = {}


def binary_cursor() -> psycopg.Cursor:
    """A psycopg cursor on Django's connection with server-side binding and pgvector's binary adapters.

    Results come back in binary (``execute(..., binary=True)``): a vector is its float32 bytes, not
    text to parse; a query vector goes out the same way. The ``vector`` type's oid is read once per
    database and process, not per connection (a search opens a connection per path).
    """
    connection.ensure_connection()
    raw = connection.connection
    db = connection.settings_dict
    key = (db.get("HOST"), db.get("PORT"), db["NAME"])
    info = _vector_types.get(key)
    if info is None:
        info = _vector_types[key] = TypeInfo.fetch(raw, "vector")
    cur = psycopg.Cursor(raw)
    register_vector_info(cur, info)
    return cur


def _numpy(value) -> np.ndarray | None:
    return None if value is None else value.to_numpy()


# --- vector path ------------------------------------------------------------------------

_NEAREST = ("SELECT c.id FROM knowledge_chunk c JOIN knowledge_document d ON d.id = c.document_id"
            " WHERE c.kb_id = %s AND c.enabled AND d.status = 'ready' AND c.{column} IS NOT NULL AND {conditions}"
            " ORDER BY c.{column} <=> %s LIMIT %s")
# Whether the KB has a FAQ chunk, from the small partial index chunk_kb_has_question (migration 0015): an
# uncorrelated condition, so PostgreSQL checks it once, before the question scan, and skips that scan without.
_HAS_QUESTIONS = "EXISTS (SELECT 1 FROM knowledge_chunk f WHERE f.kb_id = %s AND f.question_embedding IS NOT NULL)"


@functools.lru_cache(maxsize=256)
def _vector_sql(conditions: str) -> str:
    """The one statement of a vector search for a shape of conditions (kept: nothing is built per search)."""
    pair = _NEAREST.format(column="embedding", conditions=conditions)
    question = _NEAREST.format(column="question_embedding", conditions=f"{conditions} AND {_HAS_QUESTIONS}")
    return (f"WITH pair AS ({pair}), question AS ({question})"
            " SELECT c.id, 1 - (c.embedding <=> %s), 1 - (c.question_embedding <=> %s) FROM knowledge_chunk c"
            " WHERE c.id IN (SELECT id FROM pair UNION SELECT id FROM question) AND c.embedding IS NOT NULL")


class PgVectorStore:
    """Cosine search with pgvector's HNSW indexes; permissions and filters are in the same SQL.

    A FAQ chunk has two vectors, its question–answer pair (``embedding``) and its
    question alone (``question_embedding``): a second HNSW scan, over the partial
    index of question vectors, with the same conditions, brings in chunks whose
    question matches (skipped in a KB without FAQ chunks); every candidate of the
    union is scored by its pair's cosine blended with its question's
    (``evidence.faq_cosine``, measured). One statement (``statement``) does it all.
    """

    def statement(self, *, kb_id: int, query_vector: np.ndarray, top_k: int, filters: SearchFilters,
                  scope: AccessScope) -> tuple[str, list]:
        """The SQL and parameters ``search`` runs (tests read its plan)."""
        vec = np.asarray(query_vector, dtype=np.float32)
        visibility, params = scope_documents_sql(scope, kb_id, alias="d")
        conditions = f"{visibility} AND {_filters_sql(filters, params)}"
        k = int(top_k)
        return _vector_sql(conditions), [kb_id, *params, vec, k, kb_id, *params, kb_id, vec, k, vec, vec]

    def search(self, *, kb_id: int, query_vector: np.ndarray, top_k: int, filters: SearchFilters,
               scope: AccessScope) -> list[tuple[int, float]]:
        if top_k <= 0:
            return []
        sql, params = self.statement(kb_id=kb_id, query_vector=query_vector, top_k=top_k, filters=filters, scope=scope)
        with transaction.atomic(), binary_cursor() as cur:
            # ef_search must cover the candidate count; relaxed iterative scans
            # (pgvector >= 0.8) keep filtered HNSW scans from returning too few rows.
            settings_sql = "SELECT set_config('hnsw.ef_search', %s, true)"
            if _supports_iterative_scan():
                settings_sql += ", set_config('hnsw.iterative_scan', 'relaxed_order', true)"
            cur.execute(settings_sql, [str(max(40, min(1000, 2 * int(top_k))))])
            cur.execute(sql, params, binary=True)
            # A chunk without a question vector scores its pair's cosine (faq_cosine(pair, None) is pair).
            best = [(int(i), faq_cosine(float(pair), None if question is None else float(question)))
                    for i, pair, question in cur.fetchall() if pair is not None]
        return sorted(best, key=lambda hit: (-hit[1], hit[0]))[: int(top_k)]


_iterative: bool | None = None


def _supports_iterative_scan() -> bool:
    global _iterative
    if _iterative is None:
        with connection.cursor() as cur:
            cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cur.fetchone()
        parts = tuple(int(p) for p in (row[0] if row else "0.0.0").split(".")[:2])
        _iterative = parts >= (0, 8)
    return _iterative


# --- chunk payloads ------------------------------------------------------------------------

_COLUMNS = ("c.id, c.kb_id, c.document_id, c.ordinal, c.content, c.section_path, c.page_start, c.page_end,"
            " c.chunk_type, c.metadata, d.title, d.source_name, d.external_id")


@functools.lru_cache(maxsize=16)
def _chunks_sql(where: str, with_vectors: bool, order: str = "") -> str:
    """Chunks served now (enabled, document ready) that the scope reads (``scope_chunks_sql``) and ``where`` holds."""
    visibility, _ = scope_chunks_sql(AccessScope())
    columns = _COLUMNS + (", c.embedding, c.question_embedding" if with_vectors else "")
    return (f"SELECT {columns} FROM knowledge_chunk c JOIN knowledge_document d ON d.id = c.document_id"
            f" WHERE {where} AND c.enabled AND d.status = 'ready' AND {visibility} {order}")


def _record(row, with_vectors: bool) -> ChunkRecord:
    metadata = row[9]
    return ChunkRecord(
        chunk_id=row[0], kb_id=row[1], document_id=row[2], ordinal=row[3], content=row[4],
        section_path=list(row[5] or []), page_start=row[6], page_end=row[7], chunk_type=row[8],
        metadata=(json.loads(metadata) if isinstance(metadata, (str, bytes)) else metadata) or {},
        title=row[10], source_name=row[11], external_id=row[12],
        vector=_numpy(row[13]) if with_vectors else None,
        question_vector=_numpy(row[14]) if with_vectors else None,
    )


class DjangoChunkStore:
    """Loads chunk payloads in one statement each, re-checking permissions (enabled, ready, groups) in SQL."""

    def _select(self, where: str, params: list, *, scope: AccessScope, with_vectors: bool,
                order: str = "") -> list[ChunkRecord]:
        _, visibility = scope_chunks_sql(scope)
        with binary_cursor() as cur:
            cur.execute(_chunks_sql(where, with_vectors, order), [*params, *visibility], binary=True)
            return [_record(row, with_vectors) for row in cur.fetchall()]

    def fetch(self, chunk_ids: Sequence[int], *, scope: AccessScope, with_vectors: bool = False,
              kb_ids: Sequence[int] | None = None) -> dict[int, ChunkRecord]:
        if not chunk_ids:
            return {}
        where, params = "c.id = ANY(%s)", [[int(i) for i in chunk_ids]]
        if kb_ids is not None:
            where, params = where + " AND c.kb_id = ANY(%s)", [*params, [int(k) for k in kb_ids]]
        return {r.chunk_id: r for r in self._select(where, params, scope=scope, with_vectors=with_vectors)}

    def neighbours(self, record: ChunkRecord, *, before: int, after: int, scope: AccessScope) -> list[ChunkRecord]:
        return self._select("c.document_id = %s AND c.ordinal BETWEEN %s AND %s AND c.id <> %s",
                            [record.document_id, record.ordinal - before, record.ordinal + after, record.chunk_id],
                            scope=scope, with_vectors=False, order="ORDER BY c.ordinal")


# --- keyword path: BM25 index in three tiers -----------------------------------------------

@dataclass
class _Cached:
    version: int
    fingerprint: str
    index: BM25Index


class BM25IndexStore:
    """The KB's BM25 index in process memory (L1), Redis (L2, TTL) and the BM25Index row (L3).

    Every tier is keyed by the KB version, so a copy made before any content
    change is noticed as stale (counting chunks would miss an edit). A stale or
    missing index is brought up to date incrementally from the stored tokens
    (nothing is re-tokenized) under a per-KB lock: a PostgreSQL advisory lock
    across processes, a threading lock within one. While another thread or
    process holds the lock, a search waits up to ``stale_wait`` seconds for its
    update, then serves the previous in-memory version if there is one.
    Blobs are BM25Index.to_bytes (numpy arrays + JSON), never pickles.
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
    # loop). An incremental update takes well under this (docs/scaling.md: ~1 s per 100k chunks to load).
    stale_wait = 3.0
    _poll = 0.05

    def __init__(self) -> None:
        self._l1: dict[int, _Cached] = {}
        self._locks: dict[int, threading.Lock] = {}
        self._guard = threading.Lock()
        self.last_source: dict[int, str] = {}  # kb id → "l1" | "l2" | "l3" | "incremental" | "build" | "stale"

    # tiers ---------------------------------------------------------------
    def _redis(self):
        return redis_client()

    @staticmethod
    def _l2_key(kb_id: int, version: int, fingerprint: str) -> str:
        return f"{settings.ZHIKU_REDIS_PREFIX}:bm25:{kb_id}:{version}:{fingerprint}"

    def _l2_get(self, kb_id: int, version: int, fingerprint: str) -> BM25Index | None:
        client = self._redis()
        if client is None:
            return None
        try:
            blob = client.get(self._l2_key(kb_id, version, fingerprint))
        except Exception:  # noqa: BLE001
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
        except Exception:  # noqa: BLE001
            logger.warning("could not write the BM25 index of KB %s to Redis", kb_id)

    def _lock_for(self, kb_id: int) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(kb_id, threading.Lock())

    def invalidate_local(self, kb_id: int | None = None) -> None:
        if kb_id is None:
            self._l1.clear()
        else:
            self._l1.pop(kb_id, None)

    # main entry ----------------------------------------------------------
    def get_index(self, kb: KBSearchConfig) -> BM25Index:
        version = KnowledgeBase.objects.filter(pk=kb.kb_id).values_list("version", flat=True).first()
        if version is None:
            raise KeywordUnavailable("knowledge base is gone")
        fingerprint = get_analyzer(kb.analyzer).fingerprint
        cached = self._l1.get(kb.kb_id)
        if cached and cached.version == version and cached.fingerprint == fingerprint:
            self.last_source[kb.kb_id] = "l1"
            return cached.index
        lock = self._lock_for(kb.kb_id)
        if not (lock.acquire(timeout=self.stale_wait) if cached is not None else lock.acquire()):
            self.last_source[kb.kb_id] = "stale"
            return cached.index  # another thread is still updating; serve the previous version
        try:
            cached = self._l1.get(kb.kb_id)
            if cached and cached.version == version and cached.fingerprint == fingerprint:
                self.last_source[kb.kb_id] = "l1"
                return cached.index
            index = self._l2_get(kb.kb_id, version, fingerprint)
            if index is not None:
                self.last_source[kb.kb_id] = "l2"
            else:
                index, source = self._load_or_build(kb.kb_id, version, fingerprint, stale=cached)
                if index is None:
                    self.last_source[kb.kb_id] = "stale"
                    return cached.index  # type: ignore[union-attr]
                self.last_source[kb.kb_id] = source
            self._l1[kb.kb_id] = _Cached(version, fingerprint, index)
            return index
        except KeywordUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - search goes vector-only rather than failing
            logger.exception("BM25 index of KB %s unavailable", kb.kb_id)
            raise KeywordUnavailable(str(exc)) from exc
        finally:
            lock.release()

    def _load_or_build(self, kb_id: int, version: int, fingerprint: str, *, stale: _Cached | None):
        """L3 hit, or an incremental update of L3/L1, or a full build; persists to L3 and L2."""
        with transaction.atomic(), connection.cursor() as cur:
            if stale is not None:
                deadline = time.monotonic() + self.stale_wait
                while True:
                    cur.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [self.LOCK_NAMESPACE, kb_id])
                    if cur.fetchone()[0]:
                        break
                    if time.monotonic() >= deadline:
                        return None, "stale"  # another process is still building: serve what we have
                    time.sleep(self._poll)
            else:
                cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", [self.LOCK_NAMESPACE, kb_id])
            row = BM25IndexRow.objects.filter(kb_id=kb_id).first()
            # Re-read the version under the lock: a build may have just finished.
            version = KnowledgeBase.objects.filter(pk=kb_id).values_list("version", flat=True).first() or version
            base: BM25Index | None = None
            base_built_at = None
            if row is not None and row.analyzer_fingerprint == fingerprint and row.format_version == FORMAT_VERSION:
                try:
                    base = BM25Index.from_bytes(bytes(row.data))
                    base_built_at = row.built_at
                except IndexFormatError:
                    base = None
                if base is not None and row.kb_version == version:
                    self._l2_put(kb_id, version, fingerprint, bytes(row.data))
                    return base, "l3"
            if base is None and stale is not None and stale.fingerprint == fingerprint:
                base = stale.index
                base_built_at = None  # unknown: diff on ids and all modified rows since the row's time
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
                "data": blob, "format_version": FORMAT_VERSION, "chunk_count": index.n_docs,
                "kb_version": version, "analyzer_fingerprint": fingerprint,
            })
            # built_at (auto_now) is the save time; stamp it with the start so rows
            # changed during the build count as modified next time.
            BM25IndexRow.objects.filter(kb_id=kb_id).update(built_at=started)
        self._l2_put(kb_id, version, fingerprint, blob)
        return index, source

    def allowed_ids(self, *, kb_id: int, filters: SearchFilters, scope: AccessScope) -> np.ndarray | None:
        """None when the caller may see every indexed chunk; else the ids allowed, from SQL."""
        restricted_exist = kb_id not in scope.full_access_kb_ids and Restriction.objects.filter(document__kb_id=kb_id).exists()
        if filters.empty and not restricted_exist:
            return None
        qs = Chunk.objects.filter(kb_id=kb_id, enabled=True, document__status=DocumentStatus.READY)
        qs = qs.filter(scope_documents_q(scope, kb_id)).filter(_filters_q(filters))
        return np.fromiter(qs.values_list("id", flat=True), dtype=np.int64)


_keyword_store: BM25IndexStore | None = None
_store_lock = threading.Lock()


def keyword_store() -> BM25IndexStore:
    """The process-wide BM25 index store (its L1 lives as long as the process)."""
    global _keyword_store
    with _store_lock:
        if _keyword_store is None:
            _keyword_store = BM25IndexStore()
        return _keyword_store


def index_load_timings(kb: KBSearchConfig) -> dict[str, float]:
    """Seconds to get the KB's index from each tier (for the benchmark): build, L3 row, L2 Redis, L1."""
    store = BM25IndexStore()
    out: dict[str, float] = {}
    BM25IndexRow.objects.filter(kb_id=kb.kb_id).delete()
    t = time.perf_counter(); store.get_index(kb); out["build"] = time.perf_counter() - t
    store.invalidate_local(); client = store._redis()
    if client is not None:
        for key in client.scan_iter(f"{settings.ZHIKU_REDIS_PREFIX}:bm25:{kb.kb_id}:*"):
            client.delete(key)
    t = time.perf_counter(); store.get_index(kb); out["l3_postgres"] = time.perf_counter() - t
    if client is not None:
        store.invalidate_local()
        t = time.perf_counter(); store.get_index(kb); out["l2_redis"] = time.perf_counter() - t
    t = time.perf_counter(); store.get_index(kb); out["l1_memory"] = time.perf_counter() - t
    return out
