"""Fusion of ranked lists and scores, per-question path weights, and MMR: pure functions, and the fuse stage.

``fuse`` (per KB): ``minmax_fusion`` (``kb.fusion == "score"``) or weighted ``rrf``; the KB's weights
(``path_weights``), the keyword one scaled by how much of the question BM25's first passage holds
(``keyword_trust``) and by how long the passages are (``lexical_weight``: one-line texts rank by meaning).
A path that did not run is left out. The rerank pool is the fused top ``kb.candidates`` plus BM25's top 3.
"""

from __future__ import annotations

import re
import statistics
import unicodedata
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from .protocols import ChunkRecord
    from .recall import KBRun
    from .tuning import Tuning

K = TypeVar("K", bound=Hashable)


def _weights(n: int, weights: Sequence[float] | None) -> list[float]:
    if weights is None:
        return [1.0] * n
    if len(weights) != n:
        raise ValueError(f"{len(weights)} weights for {n} inputs")
    return [float(w) for w in weights]


def rrf(
    ranked_lists: Sequence[Sequence[K]],
    weights: Sequence[float] | None = None,
    *,
    rrf_k: int = 60,
) -> dict[K, float]:
    """Weighted reciprocal rank fusion.

    Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet
    and individual Rank Learning Methods", SIGIR 2009:
    ``score(d) = Σ_i w_i / (rrf_k + rank_i(d))`` with ranks from 1, summed over
    the lists that contain ``d`` (default weights 1). ``rrf_k`` is the
    smoothing constant, not the number of results: cut the sorted result
    yourself (``ranked``). A repeated id within one list counts at its first
    rank only.

    Beware unequal weights with a large ``rrf_k``: they act as a hard priority,
    not a preference. With 0.6/0.4 and k 60, a candidate only the first list
    found, even at rank 30 (0.6/90 = 0.00667), beats the second list's rank-1
    candidate when the first missed it (0.4/61 = 0.00656);
    tests/knowledge/retrieval/test_fusion.py pins it.
    """
    ws = _weights(len(ranked_lists), weights)
    scores: dict[K, float] = {}
    for w, ranked in zip(ws, ranked_lists, strict=True):
        seen: set[K] = set()
        rank = 0
        for item in ranked:
            if item in seen:
                continue
            seen.add(item)
            rank += 1
            scores[item] = scores.get(item, 0.0) + w / (rrf_k + rank)
    return scores


def minmax_fusion(
    score_maps: Sequence[Mapping[K, float]],
    weights: Sequence[float] | None = None,
    *,
    missing: float = 0.0,
    max_only: Sequence[bool] | None = None,
) -> dict[K, float]:
    """Weighted sum of per-path min-max normalised scores (CombSUM over normalised scores).

    Fox & Shaw, "Combination of Multiple Searches", TREC-2 1994 (CombSUM);
    min-max normalisation as in Lee, "Analyses of Multiple Evidence
    Combination", SIGIR 1997. Each path's scores are mapped to [0, 1] over that
    path's own candidates, so a cosine and a BM25 score never meet on their raw
    scales; a path whose candidates all score the same maps them to 1.0; a
    candidate a path did not return gets ``missing`` for that path. Beat
    weighted RRF on the CMRC 2018 and DRCD dev splits (MRR@10 0.947 on DRCD
    against 0.934 for BM25 alone and 0.898 for 0.6/0.4 RRF).
    """
    ws = _weights(len(score_maps), weights)
    normalised = [minmax(scores, from_zero=bool(max_only and max_only[i])) for i, scores in enumerate(score_maps)]
    keys: dict[K, None] = {}
    for scores in score_maps:
        keys.update(dict.fromkeys(scores))
    return {
        key: sum(w * norm.get(key, missing) for w, norm in zip(ws, normalised, strict=True))
        for key in keys
    }


def minmax(values: Mapping[K, float], *, from_zero: bool = False) -> dict[K, float]:
    """``values`` mapped onto [0, 1] by their min and max (from 0 with ``from_zero``); all equal (span 0) → 1.0."""
    if not values:
        return {}
    lo, hi = min(values.values()), max(values.values())
    if from_zero:
        lo = 0.0
    span = hi - lo
    return {k: ((v - lo) / span if span > 0 else 1.0) for k, v in values.items()}


def ramp(x: float, none: float, full: float) -> float:
    """0 at or below ``none``, 1 at or above ``full``, linear between."""
    return min(1.0, max(0.0, (x - none) / (full - none)))


def ranked(scores: Mapping[K, float], top_k: int | None = None) -> list[tuple[K, float]]:
    """``scores`` as (key, score) pairs, best first; ties keep the mapping's order."""
    items = sorted(scores.items(), key=lambda kv: -kv[1])
    return items if top_k is None else items[:top_k]


# --- query-dependent weights -----------------------------------

_A = r"A-Za-z0-9"
_EXACT_PATTERNS: tuple[re.Pattern[str], ...] = (
    # Quoted phrases: the user wants these words, literally.
    re.compile(r"“[^”]+”|「[^」]+」|『[^』]+』|《[^》]+》|‘[^’]+’|\"[^\"]+\"|`[^`]+`"),
    # snake_case, ERR_1042, MAX_RETRY
    re.compile(rf"(?<![{_A}])[{_A}]+_[{_A}_]+"),
    # letters and digits in one token: E1042, iPhone15, 0x80070005, H200
    re.compile(rf"(?<![{_A}])(?=[{_A}]*[A-Za-z])(?=[{_A}]*[0-9])[{_A}]{{2,}}(?![{_A}])"),
    # dotted or dashed with a digit: v2.3.1, SKU-123, GPT-4, 2024-05-01
    re.compile(rf"(?<![{_A}])(?=[{_A}.\-]*[0-9])[{_A}]+(?:[.\-][{_A}]+)+"),
    # camelCase / PascalCase: getUserName, HttpClient
    re.compile(r"(?<![A-Za-z0-9])[a-z]+[A-Z][A-Za-z0-9]*|(?<![A-Za-z0-9])[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*"),
    # paths and file names: /etc/nginx.conf, C:\\app\\x, settings.py
    re.compile(r"(?:[A-Za-z]:)?[\\/][\w.\-]+[\\/]|(?<![A-Za-z0-9])[\w\-]+\."
               r"(?:py|js|ts|java|go|rs|c|cpp|h|json|ya?ml|toml|ini|conf|cfg|xml|html?|css|md|txt|csv|xlsx?|docx?|pdf|pptx?|sh|sql|log)"
               r"(?![A-Za-z0-9])", re.ASCII),
    # numeric codes named as such: 错误码 1042, 报错404, error 500, 404错误
    re.compile(r"(?:错误码|错误代码|错误|报错|状态码|代码|编号|型号|订单号|工单号|error|code|errno)\s*[:：#]?\s*[0-9]{3,}"
               r"|[0-9]{3,}\s*(?:错误|报错|状态码)", re.IGNORECASE),
)


def is_exact_lookup(query: str) -> bool:
    """Whether the query names something literally: a quoted phrase, identifier, code, version or path."""
    text = unicodedata.normalize("NFKC", query)
    return any(p.search(text) for p in _EXACT_PATTERNS)


def dynamic_weights(
    query: str,
    base: tuple[float, float],
    *,
    keyword_heavy: tuple[float, float] = (0.2, 0.8),
) -> tuple[float, float]:
    """(vector_w, keyword_w) for this query: ``keyword_heavy`` for exact lookups, else ``base``.

    Embeddings blur identifiers (``ERR_1042`` and ``ERR_1043`` embed almost
    alike) while BM25 matches them exactly, so a query that names an error
    code, version, model number, path or quoted phrase leans on the keyword
    path (off by default: ``defaults.EXACT_LOOKUP_WEIGHTS``); the patterns are
    ``_EXACT_PATTERNS``.
    """
    return keyword_heavy if is_exact_lookup(query) else base


def keyword_trust_factor(coverage: float, trust: tuple[float, float]) -> float:
    """How far the keyword path counts: ``floor`` … 1 as BM25's first passage covers 0 … ``full`` of the query."""
    full, floor = trust
    return max(floor, ramp(coverage, 0.0, full))


def lexical_weight(lengths: Sequence[int], short_text: tuple[int, int] | None) -> float:
    """1 where passages are long enough for their words to count, down to 0 for one-line texts.

    Read off the median length of each path's first passages (``short_text`` = (none, full)): over
    one-line texts (a list of customer questions, titles) a paraphrased question shares one or two words
    with many of them, and BM25's and the judge's word counts rank noise.
    """
    if short_text is None or not lengths:
        return 1.0
    return ramp(statistics.median(lengths), *short_text)


def path_weights(query: str, base: tuple[float, float], *, exact_lookup: bool, trust: float | None,
                 lexical: float) -> tuple[float, float]:
    """(vector_w, keyword_w) for this question: the KB's, keyword one scaled by ``trust`` (if any) and ``lexical``."""
    weights = dynamic_weights(query, base) if exact_lookup else base
    if trust is not None:
        weights = (weights[0], weights[1] * trust)
    return (weights[0], weights[1] * lexical)


# --- diversification ------------------------------------------------------------------


def mmr(
    candidates: Sequence[K],
    relevance: Mapping[K, float],
    similarity: Callable[[K, K], float],
    *,
    lambda_: float = 0.7,
    top_k: int,
) -> list[K]:
    """Maximal marginal relevance selection.

    Carbonell & Goldstein, "The Use of MMR, Diversity-Based Reranking for
    Reordering Documents and Producing Summaries", SIGIR 1998. Greedily picks
    ``argmax λ·rel(d) − (1 − λ)·max_{s ∈ selected} sim(d, s)``; the first pick
    is the most relevant. ``relevance`` and ``similarity`` should share a
    scale (e.g. both cosines, or relevance normalised to [0, 1]). Ties go to
    the earlier candidate. Returns at most ``top_k`` candidates in pick order.
    """
    pool = list(dict.fromkeys(candidates))
    selected: list[K] = []
    # max similarity of each remaining candidate to the selected set, updated incrementally
    max_sim = {c: float("-inf") for c in pool}
    while pool and len(selected) < top_k:
        best_i = 0
        best = float("-inf")
        for i, c in enumerate(pool):
            penalty = max_sim[c] if selected else 0.0
            value = lambda_ * relevance[c] - (1 - lambda_) * penalty
            if value > best:
                best, best_i = value, i
        chosen = pool.pop(best_i)
        selected.append(chosen)
        for c in pool:
            s = similarity(c, chosen)
            if s > max_sim[c]:
                max_sim[c] = s
    return selected


# --- the fuse stage ----------------------------------------------------------------------

def fuse(run: KBRun, query: str, records: Mapping[int, ChunkRecord], tuning: Tuning) -> None:
    """One KB's paths fused: ``fused_score``/``fused_rank`` on its candidates, its fused list and rerank pool."""
    kb, cands = run.kb, run.candidates
    trust = None
    if tuning.keyword_trust is not None and run.keyword_hits and run.keyword_hits[0][0] in records:
        coverage = run.lexical_evidence(run.keyword_hits[0][0], records).coverage
        trust = keyword_trust_factor(coverage, tuning.keyword_trust) if coverage is not None else None
    first = {c for c, _ in run.keyword_hits[:5]} | {c for c, _ in run.vector_hits[:5]}
    run.lexical_weight = lexical_weight([len(records[c].content) for c in first if c in records], tuning.short_text)
    run.weights = path_weights(query, (kb.vector_weight, kb.keyword_weight), exact_lookup=tuning.exact_lookup,
                               trust=trust, lexical=run.lexical_weight)
    paths: list[tuple[dict[int, float], list[int], float]] = []
    max_only: list[bool] = []
    if run.vector_ran:
        scores = {c: x.vector_similarity for c, x in cands.items() if x.vector_similarity is not None}
        paths.append((scores, [c for c, _ in run.vector_hits if c in cands], run.weights[0]))
        max_only.append(False)
    if run.keyword_ran:
        scores = {c: x.bm25_score for c, x in cands.items() if x.bm25_score is not None}
        paths.append((scores, [c for c, _ in run.keyword_hits if c in cands], run.weights[1]))
        max_only.append(tuning.keyword_max_norm)
    if len(paths) == 1:
        paths = [(paths[0][0], paths[0][1], 1.0)]
    if kb.fusion == "rrf":
        fused = rrf([ids for _, ids, _ in paths], [w for _, _, w in paths], rrf_k=kb.rrf_k)
    else:
        fused = minmax_fusion([sc for sc, _, _ in paths], [w for _, _, w in paths], max_only=max_only)

    def best_rank(c: int) -> int:
        return min((r for r in (cands[c].vector_rank, cands[c].bm25_rank) if r is not None), default=1 << 30)

    order = sorted(fused, key=lambda c: (-fused[c], best_rank(c), c))
    for rank, cid in enumerate(order, start=1):
        cands[cid].fused_score = float(fused[cid])
        cands[cid].fused_rank = rank
    keep = set(order[: kb.candidates]) | {c for c, _ in run.keyword_hits[:tuning.pool_extra_bm25] if c in cands}
    run.fused_all = order
    run.fused_order = [c for c in order if c in keep]
