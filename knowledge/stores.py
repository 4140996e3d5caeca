"""Django implementations of the retrieval core's stores: pgvector search, chunk loading, labels (BM25: keyword_store.py)."""
from __future__ import annotations

import contextlib
import functools
import json
import logging
import weakref
from collections.abc import Sequence

import numpy as np
import psycopg
from django.conf import settings
from django.db import connection, transaction
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL
from pgvector.psycopg.vector import register_vector_info
from psycopg.types import TypeInfo

from knowledge.access import scope_chunks_sql, scope_documents_sql
from knowledge.models import Chunk, Document
from knowledge.retrieval.evidence import faq_cosine
from knowledge.retrieval.protocols import AccessScope, ChunkRecord, LabelMatch, SearchFilters

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
    """Every (key, value) of a metadata filter holds in the chunk's or the document's metadata, or in the document's
    own fields (``metadata.fields``, knowledge/document_fields.py), as text.

    The whole filter is one jsonb parameter that PostgreSQL unnests per row, so the statement
    has the same size whatever the filter holds and the work is linear in it; a condition per
    key made a statement, and a plan, as large as the filter (1,000 keys cost seconds).
    """
    return (f"NOT EXISTS (SELECT 1 FROM jsonb_each_text(%s::jsonb) AS wanted(key, value)"
            f" WHERE ({chunk}.metadata ->> wanted.key) IS DISTINCT FROM wanted.value"
            f" AND ({document}.metadata ->> wanted.key) IS DISTINCT FROM wanted.value"
            f" AND ({document}.metadata -> 'fields' ->> wanted.key) IS DISTINCT FROM wanted.value)")


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


def filters_q(filters: SearchFilters) -> Q:
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
    register_vector_info(cur, info)  # type: ignore[arg-type]  # pgvector types a connection; psycopg adapts a cursor too
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
        # Autocommit: one round trip, the session keeps the scan settings it was given. Inside a transaction a
        # session setting would roll back with it: set for this transaction only.
        session = connection.get_autocommit() and not connection.in_atomic_block
        with contextlib.nullcontext() if session else transaction.atomic(), binary_cursor() as cur:
            _scan_settings(cur, str(max(40, min(1000, 2 * int(top_k)))), session=session)
            cur.execute(sql, params, binary=True)
            rows = cur.fetchall()
        # A chunk without a question vector scores its pair's cosine (faq_cosine(pair, None) is pair).
        best = [(int(i), faq_cosine(float(pair), None if question is None else float(question)))
                for i, pair, question in rows if pair is not None]
        return sorted(best, key=lambda hit: (-hit[1], hit[0]))[: int(top_k)]


# The scan settings each open connection's session holds (set once, not before every search).
_session_ef: weakref.WeakKeyDictionary[psycopg.Connection, str] = weakref.WeakKeyDictionary()


def _scan_settings(cur: psycopg.Cursor, ef_search: str, *, session: bool) -> None:
    """ef_search covering the candidate count; relaxed iterative scans (pgvector >= 0.8) keep filtered HNSW
    scans from returning too few rows. ``session``: for the connection's life (autocommit, so it cannot roll
    back), skipped when the session holds it already; else for the current transaction."""
    raw = cur.connection
    if session and _session_ef.get(raw) == ef_search:
        return
    local = "false" if session else "true"
    settings_sql = f"SELECT set_config('hnsw.ef_search', %s, {local})"
    if _supports_iterative_scan():
        settings_sql += f", set_config('hnsw.iterative_scan', 'relaxed_order', {local})"
    cur.execute(settings_sql, [ef_search])
    if session:
        _session_ef[raw] = ef_search


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
            " c.chunk_type, c.metadata, d.title, d.source_name, d.external_id, d.source_url")


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
        title=row[10], source_name=row[11], external_id=row[12], source_url=row[13],
        vector=_numpy(row[14]) if with_vectors else None,
        question_vector=_numpy(row[15]) if with_vectors else None,
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


# --- labels (learning from feedback) ---------------------------------------------------------

# An exact scan of the KB's confirmed labels (index evalquestion_kb_status): a KB holds hundreds, and a filtered HNSW
# scan could miss the nearest. Each label's passages are the chunks of the same KB holding its content hashes now.
_LABELS_SQL = (
    "WITH near AS (SELECT q.id, q.text, q.passage_hashes, q.negative_hashes, 1 - (q.question_embedding <=> %s) AS cosine"
    " FROM knowledge_evalquestion q WHERE q.kb_id = %s AND q.status = 'confirmed' AND q.embedding_model = %s"
    " AND q.question_embedding IS NOT NULL ORDER BY q.question_embedding <=> %s, q.id LIMIT %s)"
    " SELECT n.id, n.text, n.cosine,"
    " ARRAY(SELECT c.id FROM knowledge_chunk c WHERE c.kb_id = %s AND c.content_hash = ANY(n.passage_hashes) ORDER BY c.id),"
    " ARRAY(SELECT c.id FROM knowledge_chunk c WHERE c.kb_id = %s AND c.content_hash = ANY(n.negative_hashes) ORDER BY c.id)"
    " FROM near n WHERE n.cosine >= %s ORDER BY n.cosine DESC, n.id")


class DjangoLabelStore:
    """A KB's confirmed labels near a query, by pgvector in SQL, each with that KB's chunks holding its passages."""

    def nearest(self, *, kb_id: int, embedding_model: str, query_vector: np.ndarray, min_cosine: float,
                limit: int) -> list[LabelMatch]:
        vec = np.asarray(query_vector, dtype=np.float32)
        with binary_cursor() as cur:
            cur.execute(_LABELS_SQL, [vec, int(kb_id), embedding_model, vec, int(limit), int(kb_id), int(kb_id),
                                      float(min_cosine)], binary=True)
            rows = cur.fetchall()
        return [LabelMatch(label_id=int(i), question=text, cosine=float(cosine),
                           chunk_ids=tuple(int(c) for c in positive or ()),
                           negative_chunk_ids=tuple(int(c) for c in negative or ()))
                for i, text, cosine, positive, negative in rows]
