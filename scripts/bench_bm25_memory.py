"""Print what one BM25 index costs each worker process: mapped file (L0) against a private in-memory copy.

Usage: python scripts/bench_bm25_memory.py [--chunks 300000] [--workers 1,2,4] [--queries 150]
                                           [--out var/bench-scale/bm25-memory.json]
       python scripts/bench_bm25_memory.py --build-only --chunks 1000000

``--build-only``: the full build's memory as a search's process meets it: the passages stream in one at a
time (as the keyword store's row iterator hands them over), and the peak RSS of the build, then of the blob's
encoding and the file's writing, is printed above the process's RSS before the build (the real passages'
tokens, which the stream draws from, are in that baseline).

The corpus is bench_scale.py's (no database needed): the real passages of the bench
corpus's ``scale/modern.jsonl.gz`` (``--bench``) tokenized by the platform analyzer
(cached in var/bench-scale/), and beyond them passages made of the halves of two
real ones. The index is built once in this process (timed), saved as the L2/L3
blob and as the L0 file (``knowledge.retrieval.bm25_file``; size, write time).

Then for each worker count N and each mode, N fresh processes start together;
each loads the index (``mapped``: maps the file; ``memory``: decodes the blob,
as a worker did before the machine tier), runs the cmrc2018/dev questions
through ``BM25Index.search`` (top 30, the candidate depth) and reports its load
time and search p50/p95. While all N are alive this process reads each one's
RSS, USS (private) and PSS (shared pages divided among their holders) from
/proc. "Added per extra worker" is (Σ PSS of N workers − PSS of 1) / (N − 1):
the memory the machine spends on one more worker. Figures only, nothing asserted.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))


def worker(mode: str, path: str, queries_path: str) -> None:
    """One worker process: load the index, search every question, report, wait for the parent's memory reading."""
    from knowledge.retrieval.bm25 import BM25Index
    from knowledge.retrieval.bm25_file import map_index_file

    queries = json.loads(Path(queries_path).read_text(encoding="utf-8"))
    before = psutil.Process().memory_full_info()
    started = time.perf_counter()
    index = map_index_file(path) if mode == "mapped" else BM25Index.from_bytes(Path(path).read_bytes())
    load_s = time.perf_counter() - started
    latencies = []
    for _ in range(2):  # the second round is the warm one reported
        latencies = []
        for q in queries:
            t = time.perf_counter()
            index.search(q, 30)
            latencies.append((time.perf_counter() - t) * 1000)
    print(json.dumps({"load_s": load_s, "rss_before_load_mb": before.rss / 2**20, "uss_before_load_mb": before.uss / 2**20,
                      "p50_ms": float(np.percentile(latencies, 50)), "p95_ms": float(np.percentile(latencies, 95))}),
          flush=True)
    sys.stdin.readline()


def run_workers(mode: str, path: Path, queries_path: Path, count: int) -> dict:
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", mode, str(path), str(queries_path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT) for _ in range(count)]
    try:
        reports = [json.loads(p.stdout.readline()) for p in procs]
        memory = [psutil.Process(p.pid).memory_full_info() for p in procs]
    finally:
        for p in procs:
            p.stdin.close()
            p.wait(timeout=120)
    mb = 2**20
    return {
        "workers": count, "mode": mode,
        "rss_mb": [round(m.rss / mb, 1) for m in memory], "uss_mb": [round(m.uss / mb, 1) for m in memory],
        "pss_total_mb": round(sum(m.pss for m in memory) / mb, 1),
        "rss_before_load_mb": round(float(np.mean([r["rss_before_load_mb"] for r in reports])), 1),
        # What the index (and searching it) added to each worker's private memory: pages no other process shares.
        "index_private_mb": [round(m.uss / mb - r["uss_before_load_mb"], 1) for m, r in zip(memory, reports, strict=True)],
        "load_s": round(float(np.median([r["load_s"] for r in reports])), 4),
        "search_p50_ms": round(float(np.median([r["p50_ms"] for r in reports])), 2),
        "search_p95_ms": round(float(np.median([r["p95_ms"] for r in reports])), 2),
    }


def build_corpus(chunks: int, bench: Path, cache: Path) -> list[tuple[int, list[str]]]:
    import scale_corpus

    pairs, tokens = scale_corpus.load_corpus(bench, cache, processes=2)
    permutations: dict[int, np.ndarray] = {}
    return [(k + 1, scale_corpus.passage(k, pairs, tokens, permutations)[1]) for k in range(chunks)]


def build_only(chunks: int, bench: Path, cache: Path) -> dict:
    """The build's peak RSS above the baseline (ru_maxrss: the kernel's high-water mark), then the blob's and file's."""
    import resource

    import scale_corpus

    from knowledge.retrieval.bm25 import BM25Index
    from knowledge.retrieval.bm25_file import write_index_file

    pairs, tokens = scale_corpus.load_corpus(bench, cache, processes=2)
    permutations: dict[int, np.ndarray] = {}
    stream = ((k + 1, scale_corpus.passage(k, pairs, tokens, permutations)[1]) for k in range(chunks))
    mb = 2**20

    def peak_mb() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux

    baseline = psutil.Process().memory_info().rss / mb
    started = time.perf_counter()
    index = BM25Index.build(stream)
    build_s, build_peak = time.perf_counter() - started, peak_mb()
    postings = int(index.state_arrays()["cols"].shape[0])
    started = time.perf_counter()
    blob_bytes = len(index.to_bytes())
    blob_s, blob_peak = time.perf_counter() - started, peak_mb()
    with tempfile.TemporaryDirectory(prefix="bench-bm25-", dir=cache) as scratch:
        started = time.perf_counter()
        file_bytes = write_index_file(index, Path(scratch) / "index.bm25")
        file_s, file_peak = time.perf_counter() - started, peak_mb()
    return {"chunks": chunks, "terms": index.n_terms, "postings": postings, "baseline_rss_mb": round(baseline),
            "build_s": round(build_s, 1), "build_peak_above_baseline_mb": round(build_peak - baseline),
            "blob_mb": round(blob_bytes / 1e6, 1), "blob_encode_s": round(blob_s, 1),
            "blob_peak_above_baseline_mb": round(blob_peak - baseline),
            "file_mb": round(file_bytes / 1e6, 1), "file_write_s": round(file_s, 1),
            "file_peak_above_baseline_mb": round(file_peak - baseline)}


def main() -> int:
    # Long: the benchmark's one sequence (corpus, build, files, runs, summary), printed as it goes.
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(*sys.argv[2:5])
        return 0
    import scale_corpus

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=300_000)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--bench", type=Path, default=scale_corpus.default_bench_dir())
    parser.add_argument("--cache", type=Path, default=ROOT / "var" / "bench-scale")
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "bench-scale" / "bm25-memory.json")
    parser.add_argument("--build-only", action="store_true", help="only the full build's peak memory, streamed")
    args = parser.parse_args()
    if args.build_only:
        print(json.dumps(build_only(args.chunks, args.bench, args.cache)), flush=True)
        return 0
    from knowledge.retrieval.analysis import get_analyzer
    from knowledge.retrieval.bm25 import BM25Index
    from knowledge.retrieval.bm25_file import map_index_file, write_index_file

    docs = build_corpus(args.chunks, args.bench, args.cache)
    started = time.perf_counter()
    index = BM25Index.build(docs)
    build_s = time.perf_counter() - started
    del docs
    analyzer = get_analyzer()
    with open(args.bench / "cmrc2018" / "dev" / "queries.jsonl", encoding="utf-8") as fh:
        queries = [analyzer.query_tokens(json.loads(line)["text"]) for _, line in zip(range(args.queries), fh, strict=False)]
    with tempfile.TemporaryDirectory(prefix="bench-bm25-", dir=args.cache) as scratch:
        folder = Path(scratch)
        (folder / "queries.json").write_text(json.dumps(queries, ensure_ascii=False), encoding="utf-8")
        started = time.perf_counter()
        blob = index.to_bytes()
        blob_s = time.perf_counter() - started
        (folder / "index.blob").write_bytes(blob)
        started = time.perf_counter()
        file_bytes = write_index_file(index, folder / "index.bm25")
        write_s = time.perf_counter() - started
        same = all(map_index_file(folder / "index.bm25").search(q, 10) == index.search(q, 10) for q in queries)
        del index
        result = {"chunks": args.chunks, "build_s": round(build_s, 2), "blob_mb": round(len(blob) / 1e6, 1),
                  "blob_encode_s": round(blob_s, 2), "file_mb": round(file_bytes / 1e6, 1),
                  "file_write_s": round(write_s, 2), "mapped_top10_identical": same, "runs": []}
        del blob
        print(json.dumps({k: v for k, v in result.items() if k != "runs"}), flush=True)
        for count in [int(n) for n in args.workers.split(",")]:
            for mode in ("mapped", "memory"):
                run = run_workers(mode, folder / ("index.bm25" if mode == "mapped" else "index.blob"),
                                  folder / "queries.json", count)
                result["runs"].append(run)
                print(json.dumps(run), flush=True)
    for mode in ("mapped", "memory"):
        runs = {r["workers"]: r for r in result["runs"] if r["mode"] == mode}
        one = runs.get(1)
        for n, r in sorted(runs.items()):
            if one and n > 1:
                r["added_per_extra_worker_mb"] = round((r["pss_total_mb"] - one["pss_total_mb"]) / (n - 1), 1)
        print(f"{mode:>6}: " + "; ".join(
            f"{n} workers Σ PSS {r['pss_total_mb']:.0f} MB (+{r.get('added_per_extra_worker_mb', 0):.0f} MB/extra), "
            f"RSS each {max(r['rss_mb']):.0f} MB, private for the index {max(r['index_private_mb']):.0f} MB, "
            f"load {r['load_s'] * 1000:.1f} ms, p50 {r['search_p50_ms']:.2f} ms"
            for n, r in sorted(runs.items())))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
