"""Fixtures of the retrieval tests: real CMRC passages and queries from the bench data, where it is present."""
from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from knowledge.retrieval.analysis import AnalyzerConfig, get_analyzer

BENCH = Path(os.environ.get("ZHIKU_BENCH_DIR", Path(__file__).resolve().parents[3].parent / "shared" / "bench"))


def _read_jsonl(path: Path, limit: int) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for _, line in zip(range(limit), fh, strict=False)]


@pytest.fixture(scope="module")
def cmrc():
    """First 300 CMRC passages, tokenized by the real analyzer, and 60 of its queries."""
    split = BENCH / "cmrc2018" / "dev"
    if not (split / "corpus.jsonl").exists():
        pytest.skip(f"bench data not found at {split}")
    analyzer = get_analyzer(AnalyzerConfig())
    docs = [analyzer.tokenize(p["title"] + "\n" + p["text"]) for p in _read_jsonl(split / "corpus.jsonl", 300)]
    queries = _read_jsonl(split / "queries.jsonl", 1266)
    rng = random.Random(20240501)
    query_tokens = [analyzer.query_tokens(q["text"]) for q in rng.sample(queries, 60)]
    return docs, query_tokens
