"""Selection: the KBs' lists merged into one ranking, near-duplicates skipped, cut to ``top_k``, BM25's top 3 rescued.

``merge``  one ranking by calibrated relevance, each KB's own order kept.
``cut``    near-duplicates skipped (``fusion.mmr`` with a similarity that only counts chunk-vector cosine >
           ``DUPLICATE_COSINE`` or equal text), the list cut to ``top_k`` and BM25's top 3 rescued into it (they
           replace the lowest others, never the first result; ``metadata["rescued"] = True``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from . import fusion
from .protocols import ChunkRecord
from .recall import KBRun
from .text import norm_text
from .trace import Trace, snapshot
from .tuning import Tuning
from .types import Candidate


def merge(runs: list[KBRun], judge_depth: int) -> list[Candidate]:
    """One ranking across KBs by calibrated relevance, each KB's own order kept.

    A KB's list is keyed by the best relevance at or below each position
    within its judged head (and never more than the position above), so
    the KB holding the best evidence comes first, a KB's internal order
    (fusion, rerank) is untouched, and adding a KB that holds nothing
    better changes neither the first result nor the hit.
    """
    keyed: list[tuple[float, int, int, Candidate]] = []
    for run in runs:
        rel = [run.candidates[c].relevance or 0.0 for c in run.final_order]
        head = min(judge_depth, len(rel))
        keys = rel[:]
        for i in range(head - 2, -1, -1):
            keys[i] = max(keys[i], keys[i + 1])
        for i in range(head, len(keys)):
            keys[i] = min(keys[i], keys[i - 1]) if i else keys[i]
        keyed += [(keys[i], i, run.order, run.candidates[c]) for i, c in enumerate(run.final_order)]
    keyed.sort(key=lambda k: (-k[0], k[1], k[2]))
    return [c for *_, c in keyed]


def cut(merged: list[Candidate], records: Mapping[int, ChunkRecord], runs: list[KBRun], top_k: int, *,
        tuning: Tuning, judge_one: Callable[[KBRun, int, Mapping[int, ChunkRecord]], None],
        trace: Trace) -> list[Candidate]:
    """Near-duplicates skipped, the list cut to ``top_k``, BM25's top 3 rescued into it."""
    selected, duplicates = _dedup_and_cut(merged, records, top_k, tuning.duplicate_cosine)
    rescued = _rescue(selected, merged, runs, top_k, duplicates, tuning.rescue_top)
    by_kb = {run.kb.kb_id: run for run in runs}
    for cand in selected:
        if cand.relevance is None:  # reached the cut from beyond the judged part (many duplicates)
            judge_one(by_kb[cand.kb_id], cand.chunk_id, records)
    trace.record("merged", lambda: [snapshot(c) for c in merged])
    trace.record("duplicates", lambda: duplicates)
    trace.record("rescued", lambda: rescued)
    return selected


def _dedup_and_cut(merged: list[Candidate], records: Mapping[int, ChunkRecord], top_k: int,
                   duplicate_cosine: float) -> tuple[list[Candidate], list[int]]:
    if not merged:
        return [], []
    ids = [c.chunk_id for c in merged]
    by_id = {c.chunk_id: c for c in merged}
    # Rank-based relevance keeps the merged order; the similarity only bites on near-duplicates.
    relevance = {cid: 1.0 - i / (len(ids) + 1) for i, cid in enumerate(ids)}
    # Enough pool for the cut after dropping duplicates; mmr is O(pool²) so keep it bounded.
    pool = ids[: max(top_k * 4, top_k + 20)]
    texts = {cid: norm_text(records[cid].content) for cid in pool}
    # Pairwise cosines of the pool's chunk vectors, one matrix per vector size (KBs may differ).
    where: dict[int, tuple[int, int]] = {}
    sims: list[np.ndarray] = []
    groups: dict[int, list[int]] = {}
    for cid in pool:
        v = records[cid].vector
        if v is not None:
            groups.setdefault(int(np.asarray(v).shape[0]), []).append(cid)
    for members in groups.values():
        m = np.stack([np.asarray(records[c].vector, dtype=np.float32) for c in members])
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        m = m / norms
        for i, c in enumerate(members):
            where[c] = (len(sims), i)
        sims.append(m @ m.T)

    def duplicate(a: int, b: int) -> bool:
        if texts[a] and texts[a] == texts[b]:
            return True
        wa, wb = where.get(a), where.get(b)
        return wa is not None and wb is not None and wa[0] == wb[0] and float(sims[wa[0]][wa[1], wb[1]]) > duplicate_cosine

    def similarity(a: int, b: int) -> float:
        return 1e6 if duplicate(a, b) else 0.0

    # With this step similarity MMR keeps the merged order and puts near-duplicates last;
    # any that still made the cut (the pool ran out) are dropped.
    picked = fusion.mmr(pool, relevance, similarity, lambda_=0.5, top_k=top_k)
    selected: list[int] = []
    for cid in picked:
        if not any(duplicate(cid, s) for s in selected):
            selected.append(cid)
    chosen = set(selected)
    duplicates = [c for c in pool if c not in chosen and any(duplicate(c, s) for s in selected)]
    return [by_id[c] for c in selected], duplicates


def _rescue(selected: list[Candidate], merged: list[Candidate], runs: list[KBRun], top_k: int,
            duplicates: list[int], rescue_top: int) -> list[int]:
    """BM25's top 3 (interleaved across KBs by rank) replace the lowest others if the cut lost them."""
    limit = min(rescue_top, top_k - 1)
    if limit <= 0:
        return []
    by_id = {c.chunk_id: c for c in merged}
    protected: list[int] = []
    for rank in range(1, rescue_top + 1):
        for run in runs:
            if len(run.keyword_hits) >= rank:
                cid = run.keyword_hits[rank - 1][0]
                if cid in by_id and cid not in duplicates:
                    protected.append(cid)
    protected = protected[:limit]
    present = {c.chunk_id for c in selected}
    missing = [cid for cid in protected if cid not in present]
    rescued: list[int] = []
    for cid in missing:
        if len(selected) < top_k:
            selected.append(by_id[cid])
        else:
            victim = next((i for i in range(len(selected) - 1, 0, -1) if selected[i].chunk_id not in protected), None)
            if victim is None:
                break
            selected[victim] = by_id[cid]
        by_id[cid].metadata = {**by_id[cid].metadata, "rescued": True}
        rescued.append(cid)
    if rescued:
        # The rescued keep the slots they took; the rest stays in order (victims were the lowest).
        order = {c.chunk_id: i for i, c in enumerate(merged)}
        kept = [c for c in selected if c.chunk_id not in rescued]
        selected[:] = kept + sorted((by_id[c] for c in rescued), key=lambda c: order[c.chunk_id])
    return rescued
