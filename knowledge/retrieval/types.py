"""Value types passed between retrieval stages; each score keeps its own meaning in its own field."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Candidate:
    """One chunk on its way through the pipeline.

    A stage that did not score the chunk leaves its field ``None``; no stage
    overwrites another stage's number.
    """

    chunk_id: int
    kb_id: int
    document_id: int
    vector_similarity: float | None = None
    """Cosine similarity in [-1, 1] of the query and chunk vectors: from the vector path (then
    ``vector_rank`` is set), or, for a chunk only the keyword path found, computed from its stored
    vector when the pool is loaded (``vector_rank`` stays None). None when no vector was compared."""
    vector_rank: int | None = None
    """1-based rank in the vector path."""
    bm25_score: float | None = None
    """Raw BM25Okapi score from the keyword path (unbounded, corpus-dependent)."""
    bm25_rank: int | None = None
    """1-based rank in the keyword path."""
    fused_score: float | None = None
    """Score from the fusion stage (RRF or min-max fusion, see ``fusion``)."""
    fused_rank: int | None = None
    rerank_score: float | None = None
    """Cross-encoder (or fallback) score from the rerank stage."""
    final_score: float | None = None
    """The rerank stage's score, which ordered each KB's list before the judge: the fused score blended with the
    rerank score, each min-max normalised over the KB's pool (see ``rerank.rerank_pool``)."""
    judge_score: float | None = None
    """The key the judge reordered a KB's judged head by (``judging.judge_candidates``); None where the judge kept
    the rerank order (a single-path search, ``judge_rerank`` 0, or beyond the judged head)."""
    relevance: float | None = None
    """The calibrated [0, 1] score compared with the KB's threshold (see ``judge``)."""
    reader_score: float | None = None
    """The reader's probability that the passage states the answer: its best window's (``reading``); None when
    the reader is off or did not read this candidate."""
    reader_unit: dict[str, Any] | None = None
    """The window the reader scored best: ``{"start", "end", "text", "score"}`` (characters of ``content``)."""

    # Payload, filled after selection.
    content: str = ""
    title: str = ""
    section_path: list[str] = field(default_factory=list)
    page_start: int | None = None
    page_end: int | None = None
    chunk_type: str = "text"
    metadata: dict[str, Any] = field(default_factory=dict)
    source_name: str = ""
    source_url: str = ""
    """Where the document's original lives (a source's page or file; sources/), "" for an upload."""
    ordinal: int | None = None
    """Position of the chunk in its document (for citations and neighbour merging)."""


@dataclass
class StageTiming:
    """Wall time of one pipeline stage."""

    name: str
    ms: float


@dataclass
class RetrievalResult:
    """What a search returns: the chosen candidates, or a "not found" verdict."""

    hit: bool
    candidates: list[Candidate]
    not_found_text: str = ""
    timings: list[StageTiming] = field(default_factory=list)
    mode: str = "hybrid"
    """"hybrid", "vector" or "keyword": the paths that actually ran."""
    reranker: str = "none"
    keyword_available: bool = True
    """False when the BM25 index was missing or stale and the keyword path was skipped."""
    notes: list[str] = field(default_factory=list)
    relevance: float | None = None
    """The query-level judgement (the best candidate ``relevance`` within the judged head); None when nothing was found."""
    threshold: float | None = None
    """The not-found gate ``relevance`` was compared with."""
    answer_threshold: float | None = None
    """The confidence line ``relevance`` was compared with."""
    verdict: str = "not_found"
    """``answered`` (the evidence holds the answer), ``uncertain`` (the best evidence found, which may not answer
    the question) or ``not_found`` (nothing relevant); ``hit`` is ``verdict != "not_found"`` (see ``judge``)."""
    reader: float | None = None
    """The reader's best probability over the candidates it read; None when the reader is off."""
    verdict_by: str = "judge"
    """What decided the verdict: ``judge`` (the two lines on the relevance) or ``reader``."""
    debug: dict[str, Any] | None = None
    """With ``search(debug=True)``: every path's candidates and each stage's scores, for hit testing."""
