"""Search speed at scale: `manage.py bench_search --chunks 100000` loads a KB of real passages and prints p50/p95,
the bare HNSW and BM25 lookups of the same queries, and last the overhead line: the whole search over their sum."""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import connection, transaction

from knowledge.embeddings import StandInEmbedder, get_embedder, standin_vectors
from knowledge.keyword_store import index_load_timings, keyword_store
from knowledge.models import Chunk, Document, DocumentStatus, KnowledgeBase
from knowledge.retrieval.analysis import AnalyzerConfig, get_analyzer
from knowledge.retrieval.request import SearchRequest
from knowledge.services.kbs import kb_bump_version
from knowledge.services.search import Search, kb_search_config, search
from knowledge.stores import binary_cursor

STAND_IN = StandInEmbedder.model_id


def bench_dir() -> Path:
    return Path(os.environ.get("ZHIKU_BENCH_DIR", settings.BASE_DIR.parent / "shared" / "bench"))


def read_jsonl(path: Path, limit: int | None = None) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    out = []
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                out.append(json.loads(line))
                if limit and len(out) >= limit:
                    break
    return out


def raw_lookups(cfg, queries: list[str]) -> tuple[list[float], list[float]]:
    """Milliseconds of each query's bare index lookups, the floor of a search: the HNSW query alone (the KB's
    candidates, its ef_search, on an open connection) and BM25Index.search alone (the index in memory).
    Query vectors and tokens are computed first, untimed."""
    embedder = get_embedder(cfg.embedding_model)
    analyzer = get_analyzer(cfg.analyzer)
    work = [(np.asarray(embedder.embed_query(q), dtype=np.float32), analyzer.query_tokens(q)) for q in queries]
    index = keyword_store().get_index(cfg)
    k = cfg.candidates
    hnsw, bm25 = [], []
    with transaction.atomic(), binary_cursor() as cur:
        cur.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(max(40, min(1000, 2 * k)))])
        for vector, tokens in work:
            t = time.perf_counter()
            cur.execute("SELECT id FROM knowledge_chunk WHERE kb_id = %s ORDER BY embedding <=> %s LIMIT %s",
                        [cfg.kb_id, vector, k], binary=True)
            cur.fetchall()
            hnsw.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            index.search(tokens, k)
            bm25.append((time.perf_counter() - t) * 1000)
    return hnsw, bm25


class Command(BaseCommand):
    help = ("Load DRCD dev passages plus scale-corpus distractors up to --chunks into one KB (vectors from a fast, "
            "labelled stand-in embedder: a speed-only benchmark) and time warm hybrid searches and index loads.")

    def add_arguments(self, parser):
        parser.add_argument("--chunks", type=int, default=100_000)
        parser.add_argument("--queries", type=int, default=200)
        parser.add_argument("--reload", action="store_true")

    def handle(self, *args, **opts):
        n = opts["chunks"]
        name = f"bench-scale-{n}"
        User = get_user_model()
        user, _ = User.objects.get_or_create(username="bench", defaults={"is_active": False})
        kb = KnowledgeBase.objects.filter(name=name, owner=user).first()
        if kb is not None and opts["reload"]:
            kb.delete()
            kb = None
        if kb is None:
            kb = self._load(name, user, n)
        cfg = kb_search_config(kb)
        count = Chunk.objects.filter(kb=kb).count()
        self.stdout.write(f"KB {name!r}: {count} chunks; vectors: {kb.embedding_model} (stand-in, speed only)")
        loads = index_load_timings(cfg)
        self.stdout.write("BM25 index load (s): " + ", ".join(f"{k} {v:.3f}" for k, v in loads.items())
                          + ("" if settings.REDIS_URL else "  (set REDIS_URL for the Redis tier)"))
        queries = [q["text"] for q in read_jsonl(bench_dir() / "drcd" / "dev" / "queries.jsonl", opts["queries"])]
        search(Search(SearchRequest(query=queries[0]), user=user, kb_ids=[kb.pk]))  # warm: models, index in L1, connections
        totals, stages = [], {}
        for q in queries:
            t = time.perf_counter()
            result = search(Search(SearchRequest(query=q, mode="hybrid"), user=user, kb_ids=[kb.pk]))
            totals.append((time.perf_counter() - t) * 1000)
            for s in result.timings:
                stages.setdefault(s.name, []).append(s.ms)

        def p(v: list[float], q: float) -> float:
            return float(np.percentile(v, q))

        self.stdout.write(f"search hybrid + {result.reranker} rerank, {len(queries)} warm queries: "
                          f"p50 {p(totals, 50):.1f} ms, p95 {p(totals, 95):.1f} ms")
        for name_, v in stages.items():
            self.stdout.write(f"  {name_:<8} p50 {p(v, 50):7.2f} ms  p95 {p(v, 95):7.2f} ms")
        hnsw, bm25 = raw_lookups(cfg, queries)
        self.stdout.write(f"raw index lookups, same queries, top {cfg.candidates}: HNSW p50 {p(hnsw, 50):.2f} ms "
                          f"p95 {p(hnsw, 95):.2f} ms; BM25 p50 {p(bm25, 50):.2f} ms p95 {p(bm25, 95):.2f} ms")
        ratio = p(totals, 50) / (p(hnsw, 50) + p(bm25, 50))
        self.stdout.write(f"overhead: {ratio:.2f}× (hybrid p50 {p(totals, 50):.1f} ms / (HNSW p50 {p(hnsw, 50):.2f} ms"
                          f" + BM25 p50 {p(bm25, 50):.2f} ms)), hybrid p95 {p(totals, 95):.1f} ms")

    def _load(self, name: str, user, n: int) -> KnowledgeBase:
        drcd = read_jsonl(bench_dir() / "drcd" / "dev" / "corpus.jsonl")
        passages = drcd + read_jsonl(bench_dir() / "scale" / "modern.jsonl.gz", max(0, n - len(drcd)))
        passages = passages[:n]
        self.stdout.write(f"loading {len(passages)} passages …")
        analyzer = get_analyzer(AnalyzerConfig())
        dim = settings.ZHIKU_EMBEDDING_DIM
        kb = KnowledgeBase.objects.create(owner=user, name=name, embedding_model=STAND_IN, embedding_dim=dim, rerank_enabled=True)
        t0 = time.perf_counter()
        with connection.cursor() as cur:
            # Bulk loads build the HNSW index after the rows are in, not row by row.
            cur.execute("DROP INDEX IF EXISTS chunk_embedding_hnsw")
        batch = 2000
        for start in range(0, len(passages), batch):
            part = passages[start:start + batch]
            with transaction.atomic():
                docs = Document.objects.bulk_create([
                    Document(kb=kb, title=p.get("title", ""), source_name=f"{p['id']}.md", external_id=str(p["id"]),
                             doc_type="markdown", size=len(p["text"].encode()), sha256=hashlib.sha256(p["text"].encode()).hexdigest(),
                             status=DocumentStatus.READY, chunks_done=1, chunks_total=1)
                    for p in part
                ])
                texts = [f"{p.get('title', '')}\n{p['text']}" for p in part]
                vectors = standin_vectors(texts, dim)
                Chunk.objects.bulk_create([
                    Chunk(document=d, kb=kb, ordinal=0, content=p["text"], enriched=t, content_hash=hashlib.sha256(t.encode()).hexdigest(),
                          section_path=[p.get("title", "")], tokens=analyzer.tokenize(t), embedding=v)
                    for d, p, t, v in zip(docs, part, texts, vectors, strict=True)
                ])
            self.stderr.write(f"\r  {start + len(part)}/{len(passages)} ({time.perf_counter() - t0:.0f} s)")
        t1 = time.perf_counter()
        with connection.cursor() as cur:
            cur.execute("SET maintenance_work_mem = '1GB'")
            cur.execute("CREATE INDEX IF NOT EXISTS chunk_embedding_hnsw ON knowledge_chunk "
                        "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)")
            cur.execute("ANALYZE knowledge_chunk")
        kb_bump_version(kb_id=kb.pk)
        kb.refresh_from_db()
        self.stdout.write(f"\nloaded in {t1 - t0:.0f} s; HNSW index built in {time.perf_counter() - t1:.0f} s")
        return kb

