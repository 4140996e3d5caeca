"""The vector search's one statement uses its HNSW indexes: its plan, read with EXPLAIN, never scans or sorts the
chunk table, and a KB without FAQ chunks never runs the question-vector scan (issue 22: a sequential scan sorted
all 89,590 rows of a KB without FAQ chunks on every search, 57 ms to return nothing)."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from django.conf import settings
from django.db import connection

from knowledge.models import Chunk, ChunkType, Document, DocumentStatus
from knowledge.retrieval.protocols import AccessScope, SearchFilters
from knowledge.stores import PgVectorStore, binary_cursor

ROWS = 3000  # enough that a sequential scan costs the planner more than an index scan


def _fill(kb, n: int, *, faq: int = 0, seed: int = 0) -> None:
    """``n`` text chunks, and ``faq`` FAQ chunks with a question vector, each in its own ready document."""
    rng = np.random.default_rng(seed)
    dim = settings.ZHIKU_EMBEDDING_DIM

    def unit(count):
        v = rng.standard_normal((count, dim)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    docs = Document.objects.bulk_create([
        Document(kb=kb, title=f"t{i}", source_name=f"{seed}-{i}.md", doc_type="markdown", size=1,
                 sha256=hashlib.sha256(f"{seed}-{i}".encode()).hexdigest(), status=DocumentStatus.READY,
                 chunks_done=1, chunks_total=1)
        for i in range(n + faq)
    ])
    pairs, questions = unit(n + faq), unit(faq)
    Chunk.objects.bulk_create([
        Chunk(document=d, kb=kb, ordinal=0, content=f"c{i}", enriched=f"c{i}", content_hash=str(i), embedding=pairs[i],
              chunk_type=ChunkType.FAQ if i >= n else ChunkType.TEXT,
              question_embedding=questions[i - n] if i >= n else None)
        for i, d in enumerate(docs)
    ], batch_size=1000)
    with connection.cursor() as cur:
        cur.execute("ANALYZE knowledge_chunk")
        cur.execute("ANALYZE knowledge_document")


NO_FILTERS = SearchFilters()


def _plan(kb_id: int, filters: SearchFilters = NO_FILTERS, *, scope: AccessScope | None = None,
          analyze: bool = False) -> dict:
    scope = scope or AccessScope(user_id=0, full_access_kb_ids=frozenset({kb_id}))
    query = np.ones(settings.ZHIKU_EMBEDDING_DIM, dtype=np.float32)
    sql, params = PgVectorStore().statement(kb_id=kb_id, query_vector=query, top_k=30, filters=filters, scope=scope)
    with binary_cursor() as cur:
        cur.execute("SET enable_seqscan = on")
        cur.execute(f"EXPLAIN (FORMAT JSON{', ANALYZE' if analyze else ''}) {sql}", params)
        raw = cur.fetchone()[0]
    return (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]


def _nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def _describe(plan: dict, depth: int = 0) -> str:
    line = "  " * depth + " ".join(str(plan.get(k, "")) for k in ("Node Type", "Relation Name", "Index Name", "Plan Rows"))
    return "\n".join([line, *(_describe(child, depth + 1) for child in plan.get("Plans", []))])


def _question_scan(plan: dict) -> dict:
    """The scan of the question branch: over the HNSW index, or over the KB's range of the partial index of FAQ chunks
    (an exact scan of that KB's FAQ chunks only); not the EXISTS probe that gates it (an InitPlan)."""
    return next(n for n in _nodes(plan) if n.get("Relation Name") == "knowledge_chunk"
                and n.get("Parent Relationship") != "InitPlan"
                and n.get("Index Name") in ("chunk_question_hnsw", "chunk_kb_has_question"))


def _assert_indexed(plan: dict) -> None:
    """No sequential scan of the chunk table, and no sort by distance except over one KB's FAQ chunks."""
    nodes = list(_nodes(plan))
    scans = [n for n in nodes if n.get("Relation Name") == "knowledge_chunk"]
    assert not [n for n in scans if n["Node Type"] in ("Seq Scan", "Bitmap Heap Scan")], _describe(plan)
    for sort in (n for n in nodes if n["Node Type"] in ("Sort", "Incremental Sort")
                 and any("<=>" in key for key in n.get("Sort Key", []))):
        below = {n.get("Index Name") for n in _nodes(sort) if n.get("Relation Name") == "knowledge_chunk"}
        assert below == {"chunk_kb_has_question"}, _describe(plan)
    assert "chunk_embedding_hnsw" in {n.get("Index Name") for n in scans}, _describe(plan)
    assert _question_scan(plan), _describe(plan)


@pytest.mark.django_db
def test_the_vector_statement_uses_both_hnsw_indexes_with_and_without_faq_chunks(make_kb, alice):
    plain = make_kb(alice, "plain")
    _fill(plain, ROWS)
    # No FAQ chunk anywhere: every question vector is NULL (the case that sorted a sequential scan).
    _assert_indexed(_plan(plain.pk))
    assert _question_scan(_plan(plain.pk, analyze=True))["Actual Loops"] == 0  # the KB has none: never run

    faq = make_kb(alice, "faq")
    _fill(faq, ROWS // 2, faq=300, seed=1)
    for kb_id in (plain.pk, faq.pk):
        _assert_indexed(_plan(kb_id))
        # A caller without full access and a filter: the conditions stay in the same indexed scans.
        _assert_indexed(_plan(kb_id, SearchFilters(chunk_types=("faq", "text"), metadata=(("lang", "zh"),)),
                              scope=AccessScope(user_id=0, group_ids=(1,))))
    assert _question_scan(_plan(plain.pk, analyze=True))["Actual Loops"] == 0
    ran = _question_scan(_plan(faq.pk, analyze=True))
    assert ran["Actual Loops"] == 1 and ran["Actual Rows"] >= 30, _describe(_plan(faq.pk))


@pytest.mark.django_db
def test_the_one_statement_returns_the_faq_blend_and_skips_what_is_not_served(make_kb, alice):
    from knowledge.retrieval.evidence import faq_cosine

    faq = make_kb(alice, "faq")
    _fill(faq, 200, faq=50, seed=2)
    chosen = Chunk.objects.filter(kb=faq, chunk_type=ChunkType.FAQ).first()
    pair, question = np.asarray(chosen.embedding), np.asarray(chosen.question_embedding)
    query = ((pair + question) / np.linalg.norm(pair + question)).astype(np.float32)
    scope = AccessScope(user_id=0, full_access_kb_ids=frozenset({faq.pk}))
    hits = PgVectorStore().search(kb_id=faq.pk, query_vector=query, top_k=10, filters=SearchFilters(), scope=scope)
    assert hits[0][0] == chosen.pk and len(hits) == 10
    assert hits[0][1] == pytest.approx(faq_cosine(float(query @ pair), float(query @ question)), abs=1e-5)
    text = Chunk.objects.get(pk=hits[1][0])
    assert text.question_embedding is None and hits[1][1] == pytest.approx(float(query @ np.asarray(text.embedding)), abs=1e-5)
    top = chosen
    Document.objects.filter(pk=top.document_id).update(status=DocumentStatus.FAILED)
    again = PgVectorStore().search(kb_id=faq.pk, query_vector=query, top_k=10, filters=SearchFilters(), scope=scope)
    assert top.pk not in [cid for cid, _ in again] and len(again) == 10


@pytest.mark.django_db(transaction=True)
def test_the_scan_settings_are_set_once_per_session_and_only_for_the_transaction_inside_one(make_kb, alice, monkeypatch):
    """Autocommit: the session keeps ef_search (one statement a search after the first); in a transaction a
    session setting would roll back with it, so it is set for that transaction only, every time."""
    import psycopg
    from django.db import transaction

    kb = make_kb(alice, "设置")
    store = PgVectorStore()
    vector = np.ones(384, dtype=np.float32)
    statements: list[str] = []
    execute = psycopg.Cursor.execute

    def counted(cur, query, *args, **kwargs):
        statements.append(str(query))
        return execute(cur, query, *args, **kwargs)

    def search(top_k: int) -> int:
        """The statements one search sent, savepoints aside."""
        statements.clear()
        store.search(kb_id=kb.pk, query_vector=vector, top_k=top_k, filters=SearchFilters(), scope=AccessScope())
        return len([s for s in statements if "SAVEPOINT" not in s])

    def ef_search() -> str:
        with connection.cursor() as cur:
            cur.execute("SHOW hnsw.ef_search")
            return cur.fetchone()[0]

    search(10)  # the process's one-time look-ups (the vector type, pgvector's version)
    connection.close()
    connection.ensure_connection()
    monkeypatch.setattr(psycopg.Cursor, "execute", counted)
    assert search(120) == 2 and "set_config" in statements[0]  # a new session: the settings, then the search
    assert ef_search() == "240"
    assert search(120) == 1  # the session holds them: the search alone
    assert search(30) == 2 and ef_search() == "60"  # another depth: set again
    with transaction.atomic():
        assert search(200) == 2 and ef_search() == "400"
        assert search(200) == 2  # set for each transaction's search, never kept
    assert ef_search() == "60"  # the transaction's own setting went with it; the session's stays
    assert search(30) == 1
