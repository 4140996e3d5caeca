"""Rerankers behind one protocol: a sentence-transformers CrossEncoder, and the embedding-cosine fallback.

Both return one score per record, higher is better. ``name`` says which one
actually scored: ``"cross-encoder:<model>"`` or ``"cosine-fallback"``. A
``CrossEncoderReranker`` loads its model lazily on first use; if that fails
it falls back to cosine for good (no retry per query), sets
``name`` to ``"cosine-fallback"`` and keeps the reason in ``load_error``.

The rerank stage (``rerank``, per KB, with that KB's reranker or the cosine
fallback when it gives none) blends the scores with the fused score rather
than sorting by them alone: ``final_score = (1 − w)·fused + w·rerank``, each
min-max normalised over the KB's pool (the fused top ``kb.candidates`` plus
BM25's top 3), with ``w`` from ``Tuning.rerank_weights`` by reranker kind
(figures in docs/relevance.md).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .evidence import record_cosine
from .fusion import minmax
from .protocols import COSINE_FALLBACK, CROSS_ENCODER_PREFIX, ChunkRecord, Reranker

if TYPE_CHECKING:
    from .recall import KBRun
    from .trace import Trace
    from .tuning import Tuning

logger = logging.getLogger(__name__)



def passage_text(record: ChunkRecord) -> str:
    """The text a reranker reads for a chunk: title, then content (as embedded at ingestion)."""
    return f"{record.title}\n{record.content}" if record.title else record.content


class CosineFallbackReranker:
    """Cosine of the query vector with each chunk's stored vector.

    This is the same embedding the vector path searched with, so for chunks
    that path returned it repeats ``vector_similarity``; what it adds is a
    cosine for chunks only the keyword path found. Like the vector path, a FAQ
    chunk scores its pair's cosine blended with its question's (``evidence.faq_cosine``). A record
    without a vector scores ``nan`` (the pipeline treats that as "not scored").
    """

    name = COSINE_FALLBACK

    def scores(self, query: str, query_vector: np.ndarray | None, records: Sequence[ChunkRecord]) -> list[float]:
        if query_vector is None:
            raise ValueError("the cosine fallback needs the query vector")
        q = np.asarray(query_vector, dtype=np.float32)
        out: list[float] = []
        for record in records:
            if record.vector is None:
                out.append(float("nan"))
                continue
            v = np.asarray(record.vector, dtype=np.float32)
            if v.shape != q.shape:
                raise ValueError(f"chunk {record.chunk_id} has a {v.shape[0]}-d vector, the query {q.shape[0]}-d")
            out.append(float(cast(float, record_cosine(q, v, record.question_vector))))  # a float: v is there, in q's shape
        return out


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` by model name or local path, loaded on first use.

    ``loader`` (for tests) replaces ``sentence_transformers.CrossEncoder``.
    Scores are the model's outputs with its default activation (a sigmoid for
    single-label rerankers such as bge-reranker, so in [0, 1]).
    """

    def __init__(
        self,
        name_or_path: str,
        *,
        max_length: int = 512,
        batch_size: int = 16,
        device: str = "cpu",
        fallback: CosineFallbackReranker | None = None,
        loader: Callable[..., Any] | None = None,
    ) -> None:
        self.model_name = name_or_path
        self.max_length = max_length
        self.batch_size = batch_size
        self.device = device
        self._fallback = fallback or CosineFallbackReranker()
        self._loader = loader
        self._model: Any = None
        self._lock = threading.Lock()
        self.load_error: str | None = None

    @property
    def name(self) -> str:
        return COSINE_FALLBACK if self.load_error is not None else CROSS_ENCODER_PREFIX + self.model_name

    @property
    def fell_back(self) -> bool:
        return self.load_error is not None

    def _ensure_loaded(self) -> Any:
        if self._model is not None or self.load_error is not None:
            return self._model
        with self._lock:
            if self._model is None and self.load_error is None:
                try:
                    loader = self._loader
                    if loader is None:
                        from sentence_transformers import CrossEncoder

                        loader = CrossEncoder
                    self._model = loader(self.model_name, max_length=self.max_length, device=self.device)
                except Exception as exc:  # noqa: BLE001 - any load failure means "use the fallback"
                    self.load_error = f"{type(exc).__name__}: {exc}"[:500]
                    logger.warning("cross-encoder %r failed to load, using the cosine fallback: %s",
                                   self.model_name, self.load_error)
        return self._model

    def scores(self, query: str, query_vector: np.ndarray | None, records: Sequence[ChunkRecord]) -> list[float]:
        if not records:
            return []
        model = self._ensure_loaded()
        if model is None:
            return self._fallback.scores(query, query_vector, records)
        pairs = [(query, passage_text(r)) for r in records]
        with self._lock:  # torch modules are not documented as safe to share between threads
            raw = model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True)
        arr = np.asarray(raw, dtype=np.float64)
        if arr.ndim > 1:  # multi-label heads: take the last ("relevant") column
            arr = arr[:, -1]
        return [float(x) for x in arr]


# The reranker of a KB whose ``reranker_for`` gives none (stateless, shared).
FALLBACK = CosineFallbackReranker()


def rerank_pool(run: KBRun, query: str, records: Mapping[int, ChunkRecord], *, reranker: Reranker | None,
           tuning: Tuning, trace: Trace) -> None:
    """One KB's pool rescored: ``rerank_score`` where the reranker scored, ``final_score`` blended, ``final_order``.

    ``reranker`` None: the stage is off for this KB, the fused order stands (``final_score`` is the
    normalised fused score).
    """
    order = run.fused_order
    fused_norm = minmax({c: run.candidates[c].fused_score or 0.0 for c in order})
    weight = 0.0
    rerank_norm: dict[int, float] = {}
    if reranker is not None and order:
        scores: list[float] | None = None
        if reranker is FALLBACK and run.query_vector is None:
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
            for cid, s in zip(order, scores, strict=True):
                if s is not None and not math.isnan(s):
                    run.candidates[cid].rerank_score = float(s)
                    raw[cid] = float(s)
            rerank_norm = minmax(raw)
            weight = tuning.rerank_weight(reranker.name)
    for cid in order:
        cand = run.candidates[cid]
        cand.final_score = (1.0 - weight) * fused_norm[cid] + weight * rerank_norm.get(cid, 0.0)
    run.final_order = sorted(order, key=lambda c: (-(run.candidates[c].final_score or 0.0),
                                                   run.candidates[c].fused_rank or 0))
