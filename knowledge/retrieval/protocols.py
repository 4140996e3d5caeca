"""What the retrieval core needs from the outside: stores, embedders and rerankers (Django implements them)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from knowledge.retrieval import defaults
from knowledge.retrieval.analysis import AnalyzerConfig
from knowledge.retrieval.bm25 import BM25Index

# The names a reranker reports (``Reranker.name``): the embedding-cosine fallback, and a cross-encoder as a prefix of its model.
COSINE_FALLBACK = "cosine-fallback"
CROSS_ENCODER_PREFIX = "cross-encoder:"


class Reader(Protocol):
    """Reads a question against short windows of passages (``knowledge.reader``): for each ``(title, text)`` window,
    the probability that it states the answer."""

    name: str

    def read(self, question: str, windows: Sequence[tuple[str, str]]) -> list[float]: ...


class KeywordUnavailable(Exception):
    """The keyword path cannot run (index missing, being built, or broken); search goes vector-only."""


@dataclass(frozen=True)
class KBSearchConfig:
    """One KB's retrieval settings, as the core sees them."""

    kb_id: int
    embedding_model: str
    analyzer: AnalyzerConfig = AnalyzerConfig()
    top_k: int = defaults.TOP_K
    candidates: int = defaults.CANDIDATES  # depth of each path
    fusion: str = defaults.FUSION  # "score" (min-max weighted sum) or "rrf"
    rrf_k: int = defaults.RRF_K
    vector_weight: float = defaults.VECTOR_WEIGHT
    keyword_weight: float = defaults.KEYWORD_WEIGHT
    rerank: bool = defaults.RERANK
    threshold: float = defaults.THRESHOLD
    """The not-found gate: a relevance below it is ``not_found``."""
    answer_threshold: float = defaults.ANSWER_THRESHOLD
    """The confidence line: a relevance at or above it is ``answered``, between the two ``uncertain``."""
    not_found_text: str = defaults.NOT_FOUND_TEXT
    not_found_text_en: str = ""
    """Replied instead to a question asked in English (``text.asked_in_english``); "": ``not_found_text``."""
    learn: bool = False
    """Rank the passages confirmed for this question and its paraphrases first (``learning``; the KB's opt-in)."""

    def not_found_for(self, question: str) -> str:
        """The not-found text in the question's language, when the KB has one."""
        from knowledge.retrieval.text import asked_in_english

        return self.not_found_text_en if self.not_found_text_en and asked_in_english(question) else self.not_found_text
    calibration: tuple[float, float] = (1.0, 0.0)  # the KB's own (slope, offset) on the judge's logit; see judge
    version: int = 1
    name: str = ""
    life: str = ""
    """The KB's identity across a delete and a re-create under the same id (its creation time), read with
    ``version`` in the same row: the keyword store then trusts both instead of reading them again; "": unknown."""


@dataclass(frozen=True)
class SearchFilters:
    """Narrowing a search: all given conditions must hold."""

    document_ids: tuple[int, ...] = ()
    source_names: tuple[str, ...] = ()
    chunk_types: tuple[str, ...] = ()
    metadata: tuple[tuple[str, str], ...] = ()  # (key, value): chunk or document metadata equals value

    @property
    def empty(self) -> bool:
        return not (self.document_ids or self.source_names or self.chunk_types or self.metadata)


@dataclass(frozen=True)
class AccessScope:
    """Who is searching; the stores turn it into SQL conditions. Opaque to the core."""

    user_id: int | None = None
    group_ids: tuple[int, ...] = ()
    full_access_kb_ids: frozenset[int] = frozenset()  # KBs where the caller sees restricted documents too


@dataclass
class ChunkRecord:
    """A chunk's payload as loaded for the result (and its vector, for rerank fallback and MMR)."""

    chunk_id: int
    kb_id: int
    document_id: int
    ordinal: int
    content: str
    title: str = ""
    source_name: str = ""
    section_path: list[str] = field(default_factory=list)
    page_start: int | None = None
    page_end: int | None = None
    chunk_type: str = "text"
    metadata: dict[str, Any] = field(default_factory=dict)
    vector: np.ndarray | None = None
    external_id: str = ""
    source_url: str = ""  # where the document's original lives (a source's item), "" for an upload
    # FAQ chunks: the question alone, embedded as a query; the vector path scores the chunk by the
    # better of its two cosines (``vector`` is the whole question–answer pair).
    question_vector: np.ndarray | None = None


class Embedder(Protocol):
    model_id: str
    dim: int

    def embed_query(self, text: str) -> np.ndarray: ...


class VectorStore(Protocol):
    def search(self, *, kb_id: int, query_vector: np.ndarray, top_k: int, filters: SearchFilters,
               scope: AccessScope) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) best first, over chunks the scope may read and the filters allow."""


class KeywordStore(Protocol):
    def get_index(self, kb: KBSearchConfig) -> BM25Index:
        """The KB's BM25 index at its current version; raises KeywordUnavailable."""

    def allowed_ids(self, *, kb_id: int, filters: SearchFilters, scope: AccessScope) -> np.ndarray | None:
        """Chunk ids the keyword path may return (None: every id in the index)."""


class ChunkStore(Protocol):
    def fetch(self, chunk_ids: Sequence[int], *, scope: AccessScope, with_vectors: bool = False) -> dict[int, ChunkRecord]:
        """Load chunks by id, dropping any the scope may not read (checked again in SQL)."""

    def neighbours(self, record: ChunkRecord, *, before: int, after: int, scope: AccessScope) -> list[ChunkRecord]:
        """Adjacent chunks of the same document, in order (excluding ``record``)."""


class Reranker(Protocol):
    name: str

    def scores(self, query: str, query_vector: np.ndarray | None, records: Sequence[ChunkRecord]) -> list[float]:
        """A relevance score per record, higher is better."""


@dataclass(frozen=True)
class LabelMatch:
    """A confirmed label of one KB whose question is close to the query: the chunks now holding its passages."""

    label_id: int
    question: str
    cosine: float
    """Of the query's vector and the label's question vector (both embedded as queries)."""
    chunk_ids: tuple[int, ...] = ()
    """The KB's chunks holding the passages confirmed to answer the question (boosted)."""
    negative_chunk_ids: tuple[int, ...] = ()
    """The KB's chunks holding the passages confirmed wrong for it (demoted)."""


class LabelStore(Protocol):
    def nearest(self, *, kb_id: int, embedding_model: str, query_vector: np.ndarray, min_cosine: float,
                limit: int) -> list[LabelMatch]:
        """The KB's confirmed labels whose question has at least ``min_cosine`` with the query, nearest first,
        each with that KB's chunks (only) holding its passages; never another KB's."""
