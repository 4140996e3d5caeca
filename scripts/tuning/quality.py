"""Retrieval quality: MRR@10, R@1/5/10 and nDCG@10 of every configuration, one KB alone or several together."""
from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from knowledge.retrieval import defaults
from knowledge.retrieval.memory import MemoryStore
from knowledge.retrieval.protocols import KBSearchConfig
from knowledge.retrieval.request import SearchRequest
from tuning.data import MODEL, SCOPE, CachedQueryEmbedder, Split, build_store, make_retriever, split_records

# --- metrics -----------------------------------------------------------------------------


def metrics(ranked_lists: list[list[int]], relevant: list[set[int]]) -> dict[str, float]:
    mrr = r1 = r5 = r10 = ndcg = 0.0
    for ranked, rel in zip(ranked_lists, relevant, strict=True):
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
        result = retriever.search(SearchRequest(query=q["text"], mode=mode, top_k=10, debug=debug), [kb], scope=SCOPE)
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
        embedders.update({q["text"]: v for q, v in zip(split.queries, split.vectors("queries"), strict=True)})
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
                request = SearchRequest(query=q["text"], mode=mode, top_k=10)
                own.append([c.chunk_id for c in retriever.search(request, [configs[k]], scope=SCOPE).candidates])
                together.append([c.chunk_id for c in retriever.search(request, configs, scope=SCOPE).candidates])
            a, b = metrics(own, relevant), metrics(together, relevant)
            deltas.append(b["MRR@10"] - a["MRR@10"])
            print(f"| {name} | {split.name} | {a['MRR@10']:.3f} | {b['MRR@10']:.3f} | {deltas[-1]:+.3f} | "
                  f"{a['R@1']:.3f} | {b['R@1']:.3f} |", flush=True)
        print(f"| {name} | worst delta | | | {min(deltas):+.3f} | | |", flush=True)
