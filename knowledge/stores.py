"""Django implementations of the retrieval core's stores: pgvector search, chunk loading (BM25 tiers: keyword_store.py)."""
from __future__ import annotations

import json
import logging
from typing import Sequence

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL

from knowledge.access import scope_documents_q, scope_documents_sql
from knowledge.models import Chunk, Document, DocumentStatus
from knowledge.retrieval.evidence import faq_cosine
from knowledge.retrieval.protocols import AccessScope, ChunkRecord, SearchFilters

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


# --- vector path ------------------------------------------------------------------------

class PgVectorStore:
    """Cosine search with pgvector's HNSW index; permissions and filters are in the same SQL.

    A FAQ chunk has two vectors, its question–answer pair (``embedding``) and its
    question alone (``question_embedding``): a second HNSW query over the
    question vectors, with the same conditions, brings in chunks whose question
    matches; every candidate of the union is then scored by its pair's cosine
    blended with its question's (``evidence.faq_cosine``, measured).
    """

    def search(self, *, kb_id: int, query_vector: np.ndarray, top_k: int, filters: SearchFilters,
               scope: AccessScope) -> list[tuple[int, float]]:
        if top_k <= 0:
            return []
        vec = "[" + ",".join(f"{float(x):.7g}" for x in np.asarray(query_vector, dtype=np.float32)) + "]"
        visibility, params = scope_documents_sql(scope, kb_id, alias="d")
        where_filters = _filters_sql(filters, params)

        def nearest(column: str) -> str:
            return f"""
                SELECT c.id AS id, 1 - (c.{column} <=> %s::vector) AS sim
                FROM knowledge_chunk c JOIN knowledge_document d ON d.id = c.document_id
                WHERE c.kb_id = %s AND c.enabled AND d.status = 'ready' AND c.{column} IS NOT NULL
                  AND {visibility} AND {where_filters}
                ORDER BY c.{column} <=> %s::vector
                LIMIT %s
            """

        full = [vec, kb_id, *params, vec, int(top_k)]
        with transaction.atomic(), connection.cursor() as cur:
            # ef_search must cover the candidate count; relaxed iterative scans
            # (pgvector >= 0.8) keep filtered HNSW scans from returning too few rows.
            cur.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(max(40, min(1000, 2 * int(top_k))))])
            if _supports_iterative_scan():
                cur.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
            cur.execute(nearest("embedding"), full)
            best = {int(i): float(sim) for i, sim in cur.fetchall() if sim is not None}
            cur.execute(nearest("question_embedding"), full)
            question_hits = {int(i) for i, sim in cur.fetchall() if sim is not None}
            if question_hits:
                # FAQ chunks in play: both cosines of every candidate of the union, one blended score each.
                cur.execute("""
                    SELECT id, 1 - (embedding <=> %s::vector), 1 - (question_embedding <=> %s::vector)
                    FROM knowledge_chunk WHERE id = ANY(%s) AND embedding IS NOT NULL
                """, [vec, vec, list(best.keys() | question_hits)])
                best = {int(i): faq_cosine(float(pair), None if question is None else float(question))
                        for i, pair, question in cur.fetchall()}
        return sorted(best.items(), key=lambda hit: (-hit[1], hit[0]))[: int(top_k)]


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

class DjangoChunkStore:
    """Loads chunk payloads, re-checking permissions (enabled, ready, group restrictions) in SQL."""

    def _queryset(self, scope: AccessScope, kb_ids: Sequence[int]):
        qs = Chunk.objects.filter(enabled=True, document__status=DocumentStatus.READY, kb_id__in=list(kb_ids))
        visibility = Q()
        for kb_id in kb_ids:
            visibility |= Q(kb_id=kb_id) & scope_documents_q(scope, kb_id)
        return qs.filter(visibility) if kb_ids else qs.none()

    def fetch(self, chunk_ids: Sequence[int], *, scope: AccessScope, with_vectors: bool = False,
              kb_ids: Sequence[int] | None = None) -> dict[int, ChunkRecord]:
        if not chunk_ids:
            return {}
        if kb_ids is None:
            kb_ids = list(Chunk.objects.filter(pk__in=list(chunk_ids)).values_list("kb_id", flat=True).distinct())
        fields = ["id", "kb_id", "document_id", "ordinal", "content", "section_path", "page_start", "page_end",
                  "chunk_type", "metadata", "document__title", "document__source_name", "document__external_id"]
        if with_vectors:
            fields += ["embedding", "question_embedding"]
        rows = self._queryset(scope, kb_ids).filter(pk__in=list(chunk_ids)).values_list(*fields)
        out: dict[int, ChunkRecord] = {}
        for row in rows:
            rec = ChunkRecord(
                chunk_id=row[0], kb_id=row[1], document_id=row[2], ordinal=row[3], content=row[4],
                section_path=list(row[5] or []), page_start=row[6], page_end=row[7], chunk_type=row[8],
                metadata=row[9] or {}, title=row[10], source_name=row[11], external_id=row[12],
                vector=np.asarray(row[13], dtype=np.float32) if with_vectors and row[13] is not None else None,
                question_vector=np.asarray(row[14], dtype=np.float32) if with_vectors and row[14] is not None else None,
            )
            out[rec.chunk_id] = rec
        return out

    def neighbours(self, record: ChunkRecord, *, before: int, after: int, scope: AccessScope) -> list[ChunkRecord]:
        ids = list(self._queryset(scope, [record.kb_id]).filter(
            document_id=record.document_id, ordinal__gte=record.ordinal - before, ordinal__lte=record.ordinal + after,
        ).exclude(pk=record.chunk_id).order_by("ordinal").values_list("id", flat=True))
        found = self.fetch(ids, scope=scope, kb_ids=[record.kb_id])
        return [found[i] for i in ids if i in found]
