"""Recall: the query analysed, both paths per KB (vector, BM25 with its low-score retry), and the pool loaded.

``analyze``  analyzer tokens once per distinct analyzer config; one ``KBRun`` per KB.
``embed``    the query vector once per distinct embedding model (a failing model degrades its KBs to keyword
             search, with a note).
``retrieve`` per KB, in a thread pool: the top ``kb.candidates`` of each path; filters and scope apply before the
             cut (``allowed_ids``). Low-score retry (relative to the query): when BM25's top score is below
             ``LOW_SCORE_RATIO`` (0.1) × Σ idf of the query tokens, or nothing matched, and the query mixes one- and
             multi-character tokens, BM25 runs again without the one-character ones and that result is kept if it
             found anything. (An absolute score line would mean nothing across corpora of different sizes.)
             ``KeywordUnavailable`` → that KB runs vector-only, the result says so (``keyword_available``, a note).
``load``     every candidate of both paths is fetched with its vector through ``ChunkStore.fetch``, which re-checks
             the scope; what it does not return is dropped. A candidate only BM25 found gets its
             ``vector_similarity`` computed from its stored vector (``vector_rank`` stays None). A keyword hit the
             store no longer serves means the KB's index was older than its chunks (a document replaced
             mid-search): that KB's keywords are searched once more with the index read again (``reload``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from . import evidence
from .analysis import AnalyzerConfig, get_analyzer, single_char_filtered
from .bm25 import BM25Index
from .judge import JudgeSignals
from .protocols import (
    AccessScope,
    ChunkRecord,
    ChunkStore,
    Embedder,
    KBSearchConfig,
    KeywordStore,
    KeywordUnavailable,
    LabelMatch,
    SearchFilters,
    VectorStore,
)
from .trace import Trace
from .tuning import MODES, Tuning
from .types import Candidate

logger = logging.getLogger(__name__)

UNSET: Any = object()


@dataclass
class KBRun:
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
    background: Any = UNSET  # the query's cosine background (evidence.QueryBackground), computed on first use
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
    labels: list[LabelMatch] = field(default_factory=list)  # confirmed labels near the query (``learning``)

    def lexical_evidence(self, cid: int, records: Mapping[int, ChunkRecord]) -> evidence.LexicalEvidence:
        """A candidate's lexical evidence, computed once per search (keyword trust and the judge both read it)."""
        if cid not in self.lexical:
            normalize = get_analyzer(self.kb.analyzer).normalize
            record = records[cid]
            self.lexical[cid] = evidence.passage_evidence(
                self.tokens, normalize(record.content), heading=normalize(" ".join([record.title, *record.section_path])))
        return self.lexical[cid]


def validated(query: str, kbs: Sequence[KBSearchConfig], mode: str, top_k: int | None) -> tuple[str, int]:
    """The stripped query and the ``top_k`` to cut to; ``ValueError`` for what cannot be searched."""
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


def analyze(query: str, kbs: Sequence[KBSearchConfig]) -> list[KBRun]:
    """Analyzer tokens once per distinct analyzer configuration, and one run per KB."""
    tokens_by_config: dict[AnalyzerConfig, list[str]] = {}
    for kb in kbs:
        if kb.analyzer not in tokens_by_config:
            tokens_by_config[kb.analyzer] = get_analyzer(kb.analyzer).query_tokens(query)
    return [KBRun(kb=kb, order=i, tokens=tokens_by_config[kb.analyzer]) for i, kb in enumerate(kbs)]


class Recall:
    """The stores both paths read and how they run concurrently."""

    def __init__(self, *, vectors: VectorStore, keywords: KeywordStore, chunks: ChunkStore,
                 embedder_for: Callable[[str], Embedder], tuning: Tuning, max_workers: int,
                 parallel_map: Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]] | None) -> None:
        self.vectors = vectors
        self.keywords = keywords
        self.chunks = chunks
        self.embedder_for = embedder_for
        self.tuning = tuning
        self.max_workers = max(1, max_workers)
        # A caller may supply its own map (the Django side uses a persistent pool that manages DB connections).
        self.parallel_map = parallel_map

    def embed(self, query: str, runs: list[KBRun], mode: str, trace: Trace) -> None:
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

    def retrieve(self, runs: list[KBRun], *, mode: str, filters: SearchFilters, scope: AccessScope,
                 trace: Trace) -> None:
        """Both paths of every KB, concurrently; "vector"/"keyword" timed as the slowest KB's."""
        tasks: list[tuple[str, KBRun]] = []
        for run in runs:
            if mode in ("hybrid", "vector") and run.query_vector is not None:
                tasks.append(("vector", run))
            if mode in ("hybrid", "keyword"):
                tasks.append(("keyword", run))

        def work(kind: str, run: KBRun) -> tuple[str, KBRun, float, Exception | None]:
            start = time.perf_counter()
            try:
                if kind == "vector":
                    self.vector_path(run, filters=filters, scope=scope)
                else:
                    self.keyword_path(run, filters=filters, scope=scope)
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

    def vector_path(self, run: KBRun, *, filters: SearchFilters, scope: AccessScope) -> None:
        assert run.query_vector is not None
        run.vector_hits = list(self.vectors.search(kb_id=run.kb.kb_id, query_vector=run.query_vector,
                                                   top_k=run.kb.candidates, filters=filters, scope=scope))
        run.vector_ran = True

    def keyword_path(self, run: KBRun, *, filters: SearchFilters, scope: AccessScope) -> None:
        """BM25 over the KB's index, with the low-score retry without one-character tokens."""
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
            floor = self.tuning.low_score_ratio * index.query_idf_sum(run.tokens)
            if not hits or hits[0][1] < floor:
                retry = index.search(short, depth, allowed_ids=allowed)
                if retry:
                    hits, run.keyword_tokens, run.retried = retry, short, True
        run.keyword_hits = hits

    def load(self, runs: list[KBRun], *, scope: AccessScope, trace: Trace) -> dict[int, ChunkRecord]:
        """Fetch every candidate; drop what the store withholds; complete cosines for BM25-only ones."""
        for run in runs:
            _collect(run)
        wanted = [cid for run in runs for cid in run.candidates]
        records = self.chunks.fetch(wanted, scope=scope, with_vectors=True) if wanted else {}
        dropped = [c for c in wanted if c not in records]
        for run in runs:
            for cid in [c for c in run.candidates if c not in records]:
                del run.candidates[cid]
            for cid, cand in run.candidates.items():
                record = records[cid]
                cand.document_id = record.document_id
                if (self.tuning.complete_cosines and cand.vector_similarity is None and run.vector_ran
                        and run.query_vector is not None):
                    # A FAQ chunk scores its pair blended with its question, as in the vector path.
                    cand.vector_similarity = evidence.record_cosine(run.query_vector, record.vector,
                                                                    record.question_vector)
        trace.record("dropped_at_load", lambda: dropped)
        return records

    def reload(self, runs: list[KBRun], records: dict[int, ChunkRecord], *,
               filters: SearchFilters, scope: AccessScope, trace: Trace) -> dict[int, ChunkRecord]:
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
            run.kb = replace(run.kb, life="")  # the KB's version as it is now, not as the request began
            try:
                self.keyword_path(run, filters=filters, scope=scope)
            except KeywordUnavailable as exc:
                run.keyword_hits, run.keyword_error = [], str(exc)
        trace.note(f"keyword index older than the chunks served in {len(older)} knowledge base(s); searched again")
        return self.load(runs, scope=scope, trace=trace)


def _collect(run: KBRun) -> None:
    """One Candidate per chunk either path returned, with that path's numbers."""
    cands: dict[int, Candidate] = {}
    for rank, (cid, sim) in enumerate(run.vector_hits, start=1):
        cands[cid] = Candidate(chunk_id=cid, kb_id=run.kb.kb_id, document_id=0, vector_similarity=sim, vector_rank=rank)
    for rank, (cid, score) in enumerate(run.keyword_hits, start=1):
        cand = cands.get(cid) or Candidate(chunk_id=cid, kb_id=run.kb.kb_id, document_id=0)
        cand.bm25_score, cand.bm25_rank = score, rank
        cands[cid] = cand
    run.candidates = cands
