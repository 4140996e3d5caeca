"""Print analysis and BM25 speed figures: tokenize chars/s, build, query latency against rank_bm25.

Usage: python scripts/bench_bm25.py [--bench ../shared/bench] [--docs 10000] [--queries 200]

Corpus: the cmrc2018/dev passages plus passages from the scale corpus up to
--docs; queries: cmrc2018/dev questions. Nothing is asserted; figures only.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from knowledge.retrieval.analysis import AnalyzerConfig, get_analyzer  # noqa: E402 - after the sys.path line (repo root)
from knowledge.retrieval.bm25 import BM25Index  # noqa: E402 - after the sys.path line (repo root)


def _jsonl(path: Path, limit: int) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for _, line in zip(range(limit), fh, strict=False)]


def main() -> None:
    # long because: a benchmark script read top to bottom: arguments, corpus, each index built and timed, figures printed
    parser = argparse.ArgumentParser(description=__doc__)
    default_bench = Path(__file__).resolve().parents[1].parent / "shared" / "bench"
    parser.add_argument("--bench", type=Path, default=Path(os.environ.get("ZHIKU_BENCH_DIR", default_bench)))
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--no-reference", action="store_true", help="skip rank_bm25 (slow at 100k docs)")
    args = parser.parse_args()

    analyzer = get_analyzer(AnalyzerConfig())
    analyzer.tokenize("预热")
    passages = _jsonl(args.bench / "cmrc2018" / "dev" / "corpus.jsonl", args.docs)
    if len(passages) < args.docs:
        passages += _jsonl(args.bench / "scale" / "modern.jsonl.gz", args.docs - len(passages))
    texts = [p["title"] + "\n" + p["text"] for p in passages]
    chars = sum(map(len, texts))

    start = time.perf_counter()
    docs = [analyzer.tokenize(t) for t in texts]
    elapsed = time.perf_counter() - start
    n_tokens = sum(map(len, docs))
    print(f"tokenize: {len(docs)} passages, {chars / elapsed:,.0f} chars/s, {n_tokens / elapsed:,.0f} tokens/s")

    start = time.perf_counter()
    index = BM25Index.build(enumerate(docs))
    print(f"BM25Index.build: {time.perf_counter() - start:.2f} s, {index.n_terms:,} terms, avgdl {index.avgdl:.1f}")
    start = time.perf_counter()
    blob = index.to_bytes()
    t_dump = time.perf_counter() - start
    start = time.perf_counter()
    BM25Index.from_bytes(blob)
    print(f"to_bytes {t_dump * 1000:.0f} ms, from_bytes {(time.perf_counter() - start) * 1000:.0f} ms, {len(blob) / 1e6:.1f} MB")

    removed = list(range(0, len(docs), 100))
    start = time.perf_counter()
    index.with_changes(remove_ids=removed, add_docs=[(10**9 + i, docs[i]) for i in removed])
    print(f"with_changes (replace {len(removed)} docs): {time.perf_counter() - start:.2f} s")

    queries = [analyzer.query_tokens(q["text"]) for q in _jsonl(args.bench / "cmrc2018" / "dev" / "queries.jsonl", args.queries)]
    start = time.perf_counter()
    for q in queries:
        index.search(q, top_k=30)
    ours = (time.perf_counter() - start) / len(queries)
    print(f"BM25Index.search top 30: {ours * 1000:.2f} ms/query")

    if not args.no_reference:
        from rank_bm25 import BM25Okapi

        start = time.perf_counter()
        reference = BM25Okapi(docs)
        print(f"BM25Okapi build: {time.perf_counter() - start:.2f} s")
        sample = queries[: max(1, len(queries) // 10)]
        start = time.perf_counter()
        for q in sample:
            np.argsort(reference.get_scores(q))[::-1][:30]
        theirs = (time.perf_counter() - start) / len(sample)
        print(f"BM25Okapi.get_scores + sort: {theirs * 1000:.2f} ms/query ({theirs / ours:,.0f}x slower)")
        same = 0
        for q in sample:
            ref = reference.get_scores(q)
            top = np.argsort(-ref, kind="stable")[:10]
            ours_top = index.search(q, top_k=10)
            # Same top 10: the same scores in the same order (ties may list equal-scored ids differently).
            same += np.allclose([s for _, s in ours_top], ref[top][: len(ours_top)], rtol=1e-9) and (
                len(ours_top) == 10 or ref[top][len(ours_top):].max(initial=0) <= 0)
        print(f"same top 10 as BM25Okapi on {same}/{len(sample)} queries")


if __name__ == "__main__":
    main()
