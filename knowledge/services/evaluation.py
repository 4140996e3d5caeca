"""Retrieval evaluation: recall, MRR, nDCG, "not found" rates and per-stage latency, through the search service."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from knowledge.models import document_labels
from knowledge.retrieval.judge import verdict_shares
from knowledge.retrieval.request import SearchRequest
from knowledge.services.search import Search, search


@dataclass
class LabelledQuery:
    """A question and the documents that answer it, named by external id or source name (empty: unanswerable)."""

    id: str
    text: str
    relevant: list[str] = field(default_factory=list)


def _doc_names(candidate) -> set[str]:
    """The names a labelled query may use for a candidate's document (``models.document_labels``)."""
    return document_labels(candidate.document_id, candidate.source_name, str((candidate.metadata or {}).get("external_id") or ""))


def _ranked_documents(candidates, relevant: set[str], labels_kb_id: int | None) -> list[str]:
    """One entry per document, at its best chunk; a relevant document is named by its label, another ``doc:<id>``."""
    ranked: list[str] = []
    seen_docs: set[int] = set()
    for c in candidates:
        if c.document_id in seen_docs:
            continue
        seen_docs.add(c.document_id)
        names = _doc_names(c) if labels_kb_id is None or c.kb_id == labels_kb_id else set()
        ranked.append(next(iter(sorted(names & relevant)), f"doc:{c.document_id}"))
    return ranked


def _ranking_scores(ranked: list[str], relevant: set[str], ks: tuple[int, ...]) -> tuple[dict[int, float], float, float]:
    """An answerable query's recall@k for each k, reciprocal rank and nDCG, both within the first 10."""
    first = next((i for i, key in enumerate(ranked[:10], 1) if key in relevant), None)
    recalls = {k: len(relevant & set(ranked[:k])) / len(relevant) for k in ks}
    dcg = sum(1.0 / math.log2(i + 1) for i, key in enumerate(ranked[:10], 1) if key in relevant)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(relevant), 10) + 1))
    return recalls, (1.0 / first if first else 0.0), (dcg / ideal if ideal else 0.0)


def evaluate(*, user, kb_ids: Sequence[int], queries: Sequence[LabelledQuery], mode: str = "hybrid", top_k: int = 10,
             progress: Callable[[int], None] | None = None,
             labels_kb_id: int | None = None) -> dict:
    """Run every query through ``search`` and aggregate the metrics (a document counts once, at its best chunk).

    Ranking metrics use the candidates in their returned order whether or not
    the result is a hit; "not found" rates (``abstain_rate`` for unanswerable questions,
    ``false_abstain_rate`` for answerable ones) are the ``not_found`` shares of ``verdicts``. With
    ``labels_kb_id`` only that KB's documents can match a label (several KBs
    searched together may reuse external ids).
    """
    depth = max(10, top_k)
    recalls: dict[int, list[float]] = {1: [], 5: [], 10: []}
    mrr, ndcg = [], []
    abstain, false_abstain = [], []
    verdicts: dict[str, list[str]] = {"answerable": [], "unanswerable": []}
    stage_ms: dict[str, list[float]] = {}
    per_query = []
    for n, q in enumerate(queries, 1):
        result = search(Search(SearchRequest(query=q.text, top_k=depth, mode=mode), user=user, kb_ids=kb_ids))
        for t in result.timings:
            stage_ms.setdefault(t.name, []).append(t.ms)
        relevant = set(q.relevant)
        ranked = _ranked_documents(result.candidates, relevant, labels_kb_id)
        if not relevant:
            abstain.append(0.0 if result.hit else 1.0)
        else:
            false_abstain.append(0.0 if result.hit else 1.0)
            query_recalls, query_mrr, query_ndcg = _ranking_scores(ranked, relevant, tuple(recalls))
            for k, value in query_recalls.items():
                recalls[k].append(value)
            mrr.append(query_mrr)
            ndcg.append(query_ndcg)
        verdicts["answerable" if relevant else "unanswerable"].append(result.verdict)
        per_query.append({"id": q.id, "hit": result.hit, "verdict": result.verdict, "relevance": result.relevance,
                          "top": ranked[:3]})
        if progress:
            progress(n)

    def mean(values: list[float]) -> float | None:
        return round(float(np.mean(values)), 4) if values else None

    latency = {
        name: {"p50": round(float(np.percentile(v, 50)), 2), "p95": round(float(np.percentile(v, 95)), 2)}
        for name, v in stage_ms.items()
    }
    return {
        "queries": len(queries), "answerable": len(mrr), "unanswerable": len(abstain), "mode": mode,
        "recall@1": mean(recalls[1]), "recall@5": mean(recalls[5]), "recall@10": mean(recalls[10]),
        "mrr@10": mean(mrr), "ndcg@10": mean(ndcg),
        "abstain_rate": mean(abstain), "false_abstain_rate": mean(false_abstain),
        "verdicts": {kind: verdict_shares(values) for kind, values in verdicts.items()},
        "latency_ms": latency,
        "reader_ms_p50": latency.get("read", {}).get("p50"), "reader_ms_p95": latency.get("read", {}).get("p95"),
        "per_query": per_query,
    }
