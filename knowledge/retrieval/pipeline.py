"""HybridRetriever: query → analysed → vector + BM25 per KB → loaded → fused → reranked → judged → merged → cut.

``search`` lists the stages in the order they run, one module each (each timed into
``RetrievalResult.timings``; "vector"/"keyword" are the slowest KB's, as the paths run concurrently):

``analyze`` / ``embed`` / ``vector`` / ``keyword`` / ``load``   ``recall``
``fuse``     ``fusion.fuse``
``rerank``   ``rerank.rerank_pool``
``judge``    ``judging``
``learn``    ``learning`` (KBs that learn from their labels: matched after embed, pooled after load, applied here)
``merge``    ``selection`` (merge, dedup, rescue)
``read``     ``reading`` (the reader reads the first results; the verdict needs it to say answered)
``load``     ``context`` (neighbour expansion, announced continuation: what chat asks for)
``total``    the whole call; notes and debug details in ``trace``.

The knobs are one frozen ``tuning.Tuning``; the measured figures behind its defaults are in docs/relevance.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import learning, reading
from .context import expand, fill_payload
from .fusion import fuse
from .judge import NOT_FOUND, Judge
from .judging import Judging
from .protocols import (
    AccessScope,
    ChunkRecord,
    ChunkStore,
    Embedder,
    KBSearchConfig,
    KeywordStore,
    LabelStore,
    Reader,
    Reranker,
    VectorStore,
)
from .recall import KBRun, Recall, analyze, validated
from .request import SearchRequest
from .rerank import FALLBACK, rerank_pool
from .selection import cut, merge
from .trace import Trace, signals_of, snapshot
from .tuning import DEFAULT_RERANK_WEIGHTS, MODES, Tuning
from .types import Candidate, RetrievalResult

__all__ = ["DEFAULT_RERANK_WEIGHTS", "MODES", "HybridRetriever", "SearchRequest", "Tuning"]


class HybridRetriever:
    """Hybrid (vector + BM25) search over one or more knowledge bases; see the module docstring.

    The knobs come as one ``tuning`` (``HybridRetriever(..., tuning=Tuning(exact_lookup=True))``; None: the
    shipped ``Tuning()``) and read back from it (``retriever.tuning.judge_rerank``).
    """

    def __init__(
        self,
        *,
        vectors: VectorStore,
        keywords: KeywordStore,
        chunks: ChunkStore,
        embedder_for: Callable[[str], Embedder],
        reranker_for: Callable[[KBSearchConfig], Reranker | None],
        judge: Judge | None = None,
        reader: Reader | None = None,
        max_workers: int = 4,
        parallel_map: Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]] | None = None,
        tuning: Tuning | None = None,
        labels: LabelStore | None = None,
    ) -> None:
        self.tuning = Tuning() if tuning is None else tuning
        self.chunks = chunks
        self.labels = labels
        self.embedder_for = embedder_for
        self.reranker_for = reranker_for
        self.recall = Recall(vectors=vectors, keywords=keywords, chunks=chunks, embedder_for=embedder_for,
                             tuning=self.tuning, max_workers=max_workers, parallel_map=parallel_map)
        self.judging = Judging(judge=judge or Judge(), embedder_for=embedder_for, tuning=self.tuning)
        self.reader = reader

    @property
    def judge(self) -> Judge:
        return self.judging.judge

    # --- the one entry point -------------------------------------------------------------

    def search(self, request: SearchRequest, kbs: Sequence[KBSearchConfig], *, scope: AccessScope) -> RetrievalResult:
        """Search ``kbs`` for ``request`` (the query and every option of it) as ``scope`` may see it.

        ``search(SearchRequest(query="保修多久", top_k=3), kbs, scope=s)``. Raises ``ValueError`` for an empty
        query, no KBs or an unknown mode.
        """
        query, top_k = validated(request.query, kbs, request.mode, request.top_k)
        mode, filters = request.mode, request.filters
        trace = Trace(query, mode, request.debug)
        with trace.stage("analyze"):
            runs = analyze(query, kbs)
        with trace.stage("embed"):
            self.recall.embed(query, runs, mode, trace)
        learns = self.labels is not None and any(run.kb.learn for run in runs)
        if learns:
            with trace.stage("learn"):
                learning.match(runs, self.labels, self.tuning)
        self.recall.retrieve(runs, mode=mode, filters=filters, scope=scope, trace=trace)
        with trace.stage("load"):
            records = self.recall.load(runs, scope=scope, trace=trace)
            records = self.recall.reload(runs, records, filters=filters, scope=scope, trace=trace)
        if learns:
            with trace.stage("learn"):
                learning.pool(runs, records, chunks=self.chunks, scope=scope, filters=filters)
        with trace.stage("fuse"):
            for run in runs:
                fuse(run, query, records, self.tuning)
        trace.paths(runs)
        with trace.stage("rerank"):
            for run in runs:
                enabled = run.kb.rerank if request.rerank is None else request.rerank
                rerank_pool(run, query, records, reranker=(self.reranker_for(run.kb) or FALLBACK) if enabled
                             and run.fused_order else None, tuning=self.tuning, trace=trace)
        with trace.stage("judge"):
            for run in runs:
                self.judging.judge_candidates(run, records, top_k, trace)
        if learns:
            with trace.stage("learn"):
                learning.apply(runs, records, judge_one=self.judging.judge_one, judge_depth=self.tuning.judge_depth,
                               trace=trace)
        with trace.stage("merge"):
            merged = merge(runs, self.tuning.judge_depth)
            selected = cut(merged, records, runs, top_k, tuning=self.tuning, judge_one=self.judging.judge_one,
                           trace=trace)
        if request.assembles_context:
            with trace.stage("load"):
                selected = expand(selected, records, chunks=self.chunks, scope=scope,
                                  neighbours=request.expand_neighbours, merge_adjacent=request.merge_adjacent,
                                  continue_announced=request.continue_announced)
        return self._result(query, selected, runs, kbs, records, trace)

    def _result(self, query: str, selected: list[Candidate], runs: list[KBRun], kbs: Sequence[KBSearchConfig],
                records: Mapping[int, ChunkRecord], trace: Trace) -> RetrievalResult:
        """The hit decided on the best evidence over all KBs, each compared with its own KB's threshold."""
        for cand in selected:
            record = records.get(cand.chunk_id)
            if record is not None and not cand.content:
                fill_payload(cand, record)
        verdict, deciding = self.judging.decide(runs, bool(selected), trace)
        best_read, verdict_by = None, "judge"
        if self.reader is not None and selected:
            with trace.stage("read"):
                best_read = reading.read(self.reader, query, selected)
            talk = deciding is not None and deciding.chitchat is not None \
                and deciding.chitchat >= self.tuning.chitchat_cosine and not deciding.faq_match
            verdict, verdict_by = reading.decide(verdict, best_read, talk=talk,
                                                 answer_line=self.tuning.reader_answer_line,
                                                 rescue_line=self.tuning.reader_rescue_line,
                                                 relevance=deciding.relevance if deciding is not None else None,
                                                 judge_line=self.tuning.reader_judge_line)
        hit = verdict != NOT_FOUND
        trace.record("final", lambda: [{**snapshot(c), "signals": signals_of(runs, c)} for c in selected])
        names = list(dict.fromkeys(run.reranker for run in runs if run.reranker != "none"))
        ran_vector = any(run.vector_ran for run in runs)
        ran_keyword = any(run.keyword_ran for run in runs)
        trace.finish()
        return RetrievalResult(
            hit=hit,
            candidates=selected,
            not_found_text="" if hit else (deciding.kb if deciding is not None else kbs[0]).not_found_for(query),
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
            reader=best_read,
            verdict_by=verdict_by,
            debug=trace.debug,
        )
