"""In-memory implementations of the store protocols: exact cosine in numpy and ``BM25Index``.

Used by the unit tests and by ``scripts/tune_retrieval.py``; they follow the
same contracts as the Django stores (``protocols.py``): filters and the access
scope are applied before any cut, ``fetch`` drops what the scope may not read,
and chunk ids are unique across knowledge bases.

Build one ``MemoryStore`` and hand its three views to the retriever::

    store = MemoryStore()
    store.add_kb(kb, records)            # records carry their vectors
    HybridRetriever(vectors=store.vectors, keywords=store.keywords, chunks=store.chunks, ...)
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

import numpy as np

from .analysis import get_analyzer
from .bm25 import BM25Index
from .evidence import faq_cosine
from .protocols import AccessScope, ChunkRecord, KBSearchConfig, KeywordUnavailable, SearchFilters

Readable = Callable[[ChunkRecord, AccessScope], bool]


def record_matches(record: ChunkRecord, filters: SearchFilters) -> bool:
    """Whether ``record`` passes every condition of ``filters`` (the stores' semantics)."""
    if filters.document_ids and record.document_id not in filters.document_ids:
        return False
    if filters.source_names and record.source_name not in filters.source_names:
        return False
    if filters.chunk_types and record.chunk_type not in filters.chunk_types:
        return False
    for key, value in filters.metadata:
        if str(record.metadata.get(key)) != value:
            return False
    return True


class _KBData:
    def __init__(self, kb: KBSearchConfig) -> None:
        self.kb = kb
        self.records: dict[int, ChunkRecord] = {}
        self.tokens: dict[int, list[str]] = {}
        self._index: BM25Index | None = None
        self._matrix: np.ndarray | None = None
        self._matrix_ids: np.ndarray | None = None
        self._questions: tuple[np.ndarray, np.ndarray] | None = None

    def invalidate(self) -> None:
        self._index = None
        self._matrix = None
        self._matrix_ids = None
        self._questions = None

    def index(self) -> BM25Index:
        if self._index is None:
            self._index = BM25Index.build((cid, self.tokens[cid]) for cid in self.records)
        return self._index

    def matrix(self) -> tuple[np.ndarray, np.ndarray]:
        if self._matrix is None or self._matrix_ids is None:
            with_vectors = [r for r in self.records.values() if r.vector is not None]
            self._matrix_ids = np.asarray([r.chunk_id for r in with_vectors], dtype=np.int64)
            if with_vectors:
                self._matrix = np.stack([np.asarray(r.vector, dtype=np.float32) for r in with_vectors])
            else:
                self._matrix = np.zeros((0, 0), dtype=np.float32)
        return self._matrix, self._matrix_ids

    def question_matrix(self) -> tuple[np.ndarray, np.ndarray]:
        """FAQ chunks' question vectors and their ids (empty when no record has one)."""
        if self._questions is None:
            with_q = [r for r in self.records.values() if r.question_vector is not None]
            ids = np.asarray([r.chunk_id for r in with_q], dtype=np.int64)
            matrix = (np.stack([np.asarray(r.question_vector, dtype=np.float32) for r in with_q]) if with_q
                      else np.zeros((0, 0), dtype=np.float32))
            self._questions = (matrix, ids)
        return self._questions


class MemoryStore:
    """Chunks of several KBs held in memory, with a vector, keyword and chunk view over them.

    ``readable(record, scope)`` decides access (default: everything is
    readable); ``keyword_unavailable`` holds KB ids whose BM25 index "is
    missing", so ``get_index`` raises ``KeywordUnavailable`` for them.
    """

    def __init__(self, *, readable: Readable | None = None) -> None:
        self._kbs: dict[int, _KBData] = {}
        self._owner: dict[int, int] = {}  # chunk id -> kb id
        self._lock = threading.Lock()
        self.readable: Readable = readable or (lambda record, scope: True)
        self.keyword_unavailable: set[int] = set()
        self.vectors = MemoryVectorStore(self)
        self.keywords = MemoryKeywordStore(self)
        self.chunks = MemoryChunkStore(self)

    def add_kb(self, kb: KBSearchConfig, records: Iterable[ChunkRecord] = (),
               *, tokens: Sequence[Sequence[str]] | None = None) -> None:
        """Register ``kb`` (replacing an earlier registration) and add ``records`` to it."""
        with self._lock:
            old = self._kbs.pop(kb.kb_id, None)
            if old is not None:
                for cid in old.records:
                    self._owner.pop(cid, None)
            self._kbs[kb.kb_id] = _KBData(kb)
        self.add_records(kb.kb_id, records, tokens=tokens)

    def add_records(self, kb_id: int, records: Iterable[ChunkRecord],
                    *, tokens: Sequence[Sequence[str]] | None = None) -> None:
        """Add chunks; ``tokens`` (one list per record) skips tokenising title + content again."""
        data = self._kbs[kb_id]
        analyzer = get_analyzer(data.kb.analyzer)
        records = list(records)
        with self._lock:
            for i, record in enumerate(records):
                if record.kb_id != kb_id:
                    raise ValueError(f"chunk {record.chunk_id} belongs to KB {record.kb_id}, not {kb_id}")
                if self._owner.get(record.chunk_id, kb_id) != kb_id:
                    raise ValueError(f"chunk id {record.chunk_id} is already used in another KB")
                self._owner[record.chunk_id] = kb_id
                data.records[record.chunk_id] = record
                data.tokens[record.chunk_id] = (
                    list(tokens[i]) if tokens is not None
                    else analyzer.tokenize(f"{record.title}\n{record.content}" if record.title else record.content)
                )
            data.invalidate()

    def remove_records(self, chunk_ids: Iterable[int]) -> None:
        with self._lock:
            for cid in chunk_ids:
                kb_id = self._owner.pop(int(cid), None)
                if kb_id is not None:
                    data = self._kbs[kb_id]
                    data.records.pop(int(cid), None)
                    data.tokens.pop(int(cid), None)
                    data.invalidate()

    def kb(self, kb_id: int) -> _KBData:
        return self._kbs[kb_id]

    def record(self, chunk_id: int) -> ChunkRecord | None:
        kb_id = self._owner.get(chunk_id)
        return None if kb_id is None else self._kbs[kb_id].records.get(chunk_id)

    def _visible(self, kb_id: int, filters: SearchFilters, scope: AccessScope) -> list[int] | None:
        """Ids passing filters and scope; None when every chunk of the KB does (the fast path)."""
        data = self._kbs[kb_id]
        if filters.empty and all(self.readable(r, scope) for r in data.records.values()):
            return None
        return [cid for cid, r in data.records.items() if record_matches(r, filters) and self.readable(r, scope)]


class MemoryVectorStore:
    """Exact cosine search (vectors are L2-normalised, so a dot product) over one KB's chunks.

    A record with a ``question_vector`` (a FAQ chunk) scores its pair blended with its question
    (``evidence.faq_cosine``).
    """

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def search(self, *, kb_id: int, query_vector: np.ndarray, top_k: int, filters: SearchFilters,
               scope: AccessScope) -> list[tuple[int, float]]:
        if kb_id not in self._store._kbs or top_k <= 0:
            return []
        data = self._store.kb(kb_id)
        matrix, ids = data.matrix()
        q_matrix, q_ids = data.question_matrix()
        if ids.shape[0] == 0 and q_ids.shape[0] == 0:
            return []
        q = np.asarray(query_vector, dtype=np.float32)
        for stored in (matrix, q_matrix):
            if stored.shape[0] and q.shape[0] != stored.shape[1]:
                raise ValueError(f"query vector has {q.shape[0]} dimensions, KB {kb_id} stores {stored.shape[1]}")
        sims = matrix @ q if ids.shape[0] else np.zeros(0, dtype=np.float32)
        if q_ids.shape[0]:
            question = dict(zip(q_ids.tolist(), (q_matrix @ q).tolist(), strict=True))
            sims = np.asarray([faq_cosine(float(s), question.get(int(i))) for i, s in zip(ids, sims, strict=True)], dtype=np.float32)
        visible = self._store._visible(kb_id, filters, scope)
        if visible is not None:
            mask = np.isin(ids, np.asarray(visible, dtype=np.int64))
            ids, sims = ids[mask], sims[mask]
        order = np.lexsort((ids, -sims))[:top_k]
        return [(int(ids[i]), float(sims[i])) for i in order]


class MemoryKeywordStore:
    """The KB's ``BM25Index`` over analyzer tokens of title + content, rebuilt after changes."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def get_index(self, kb: KBSearchConfig) -> BM25Index:
        if kb.kb_id in self._store.keyword_unavailable or kb.kb_id not in self._store._kbs:
            raise KeywordUnavailable(f"no BM25 index for KB {kb.kb_id}")
        return self._store.kb(kb.kb_id).index()

    def allowed_ids(self, *, kb_id: int, filters: SearchFilters, scope: AccessScope) -> np.ndarray | None:
        visible = self._store._visible(kb_id, filters, scope)
        return None if visible is None else np.asarray(visible, dtype=np.int64)


class MemoryChunkStore:
    """Loads chunks by id, re-checking the scope; neighbours by document ordinal."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def fetch(self, chunk_ids: Sequence[int], *, scope: AccessScope, with_vectors: bool = False) -> dict[int, ChunkRecord]:
        out: dict[int, ChunkRecord] = {}
        for cid in chunk_ids:
            record = self._store.record(int(cid))
            if record is None or not self._store.readable(record, scope):
                continue
            out[int(cid)] = record if with_vectors else replace(record, vector=None, question_vector=None)
        return out

    def neighbours(self, record: ChunkRecord, *, before: int, after: int, scope: AccessScope) -> list[ChunkRecord]:
        data = self._store.kb(record.kb_id)
        lo, hi = record.ordinal - before, record.ordinal + after
        found = [
            r for r in data.records.values()
            if r.document_id == record.document_id and lo <= r.ordinal <= hi and r.chunk_id != record.chunk_id
            and self._store.readable(r, scope)
        ]
        return sorted(found, key=lambda r: r.ordinal)


class CharNgramEmbedder:
    """Hashed bag of characters and character bigrams, L2-normalised: a deterministic stand-in embedder.

    No model and no randomness, so tests can reason about which passage is
    closest (shared characters); ``calls`` counts ``embed_query`` calls.
    """

    def __init__(self, dim: int = 64, model_id: str = "chars") -> None:
        self.dim = dim
        self.model_id = model_id
        self.calls = 0

    def _vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        chars = [c for c in text if not c.isspace()]
        for gram in chars + [a + b for a, b in zip(chars, chars[1:], strict=False)]:
            v[zlib.crc32(gram.encode("utf-8")) % self.dim] += 1.0
        n = float(np.linalg.norm(v))
        return v / n if n else v

    def embed_query(self, text: str) -> np.ndarray:
        self.calls += 1
        return self._vector(text)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vector(t) for t in texts])
