"""Search one or more KBs as a user: permissions, settings, caches, the hybrid retriever."""
from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import numpy as np
from django.conf import settings

from core.dbconn import close_worker_connections, in_kept_connection
from core.errors import fail
from core.jsonable import candidate_json, jsonable
from knowledge.access import scope_for
from knowledge.embeddings import get_embedder
from knowledge.errors import KnowledgeError
from knowledge.ingestion.text import analyzer_config
from knowledge.keyword_store import keyword_store, life_of
from knowledge.models import KnowledgeBase, Role
from knowledge.not_found import not_found_text
from knowledge.retrieval.pipeline import MODES, HybridRetriever
from knowledge.retrieval.protocols import AccessScope, KBSearchConfig, SearchFilters
from knowledge.retrieval.request import SearchRequest
from knowledge.retrieval.rerank import CrossEncoderReranker
from knowledge.retrieval.types import RetrievalResult
from knowledge.selectors import kbs_get_for_user
from knowledge.services.query_input import MAX_TOP_K, kb_ids_clean, query_clean
from knowledge.stores import DjangoChunkStore, DjangoLabelStore, PgVectorStore, redis_client

logger = logging.getLogger(__name__)

# Budgets of a search's filters (docs/api.md, "Input budgets"). Each bounds work done per candidate
# row or per KB, far above what a person or an agent narrows a search by.
MAX_FILTER_DOCUMENTS = 1000      # document ids
MAX_FILTER_SOURCES = 100         # source names, each at most as long as a stored one (500)
MAX_METADATA_KEYS = 32           # metadata equalities, all of which must hold
MAX_METADATA_KEY_CHARS = 200
MAX_METADATA_VALUE_CHARS = 500


def kb_search_config(kb: KnowledgeBase) -> KBSearchConfig:
    return KBSearchConfig(
        kb_id=kb.pk, name=kb.name, embedding_model=kb.embedding_model,
        analyzer=analyzer_config(kb),
        top_k=kb.top_k, candidates=kb.candidate_count, fusion=kb.fusion, rrf_k=kb.rrf_k,
        vector_weight=kb.vector_weight, keyword_weight=kb.keyword_weight, rerank=kb.rerank_enabled,
        threshold=kb.score_threshold, answer_threshold=kb.answer_threshold, not_found_text=kb.not_found_text,
        not_found_text_en=kb.not_found_text_en,
        version=kb.version, life=life_of(kb.created_at),
        calibration=(kb.calibration_slope, kb.calibration_offset), learn=kb.learn_from_feedback,
    )


# --- query-embedding cache: in-process LRU in front of Redis (raw float32 bytes, never pickled) ---

class CachingEmbedder:
    """Wraps an embedder; query vectors are cached by model and text (they don't depend on KB content)."""

    def __init__(self, inner, *, size: int = 2048) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self._lru: OrderedDict[str, np.ndarray] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def embed_query(self, text: str) -> np.ndarray:
        key = settings.ZHIKU_REDIS_PREFIX + ":qemb:" + hashlib.sha256(f"{self.model_id}\x00{text}".encode()).hexdigest()
        with self._lock:
            if key in self._lru:
                self._lru.move_to_end(key)
                return self._lru[key]
        client = redis_client()
        vec = None
        if client is not None:
            try:
                blob = client.get(key)
                if blob and len(blob) == 4 * self.dim:
                    vec = np.frombuffer(blob, dtype=np.float32).copy()
            except Exception:  # noqa: BLE001 - a cache miss, not an error
                vec = None
        if vec is None:
            vec = np.asarray(self.inner.embed_query(text), dtype=np.float32)
            if client is not None:
                try:
                    client.set(key, vec.tobytes(), ex=7 * 24 * 3600)
                except Exception:  # noqa: BLE001 - a broken cache must not fail the search
                    pass
        with self._lock:
            self._lru[key] = vec
            while len(self._lru) > self._size:
                self._lru.popitem(last=False)
        return vec

    def embed_passages(self, texts):
        return self.inner.embed_passages(texts)


_embedders: dict[str, CachingEmbedder] = {}
_rerankers: dict[str, CrossEncoderReranker] = {}
_retriever: HybridRetriever | None = None
_lock = threading.Lock()


def _embedder_for(model_id: str) -> CachingEmbedder:
    with _lock:
        if model_id not in _embedders:
            _embedders[model_id] = CachingEmbedder(get_embedder(model_id))
        return _embedders[model_id]


def _reranker_for(kb: KBSearchConfig):
    """The configured CrossEncoder (ZHIKU_RERANK_MODEL), or None: the pipeline's cosine fallback."""
    name = settings.ZHIKU_RERANK_MODEL
    if not name:
        return None
    with _lock:
        if name not in _rerankers:
            _rerankers[name] = CrossEncoderReranker(name)
        return _rerankers[name]


class SettingsReader:
    """The reader as ``ZHIKU_READER`` says at each call: the process's loaded reader, or none (reads nothing)."""

    name = "e5-reader"

    def current(self):
        if not settings.ZHIKU_READER:
            return None
        from knowledge.reader.runtime import load

        return load(Path(settings.ZHIKU_READER_DIR), threads=settings.ZHIKU_TORCH_THREADS, int8=settings.ZHIKU_READER_INT8)

    def read(self, question: str, windows) -> list[float]:
        reader = self.current()
        return reader.read(question, windows) if reader is not None else []


_pool: ThreadPoolExecutor | None = None


def _parallel_map(fn, items) -> list:
    """The first item on the caller's thread (its connection is open already: the access check used it), the
    others on a persistent pool whose threads keep their connections (``core.dbconn``)."""
    global _pool
    items = list(items)
    if len(items) < 2:
        return [fn(item) for item in items]
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=settings.ZHIKU_SEARCH_WORKERS, thread_name_prefix="zhiku-search")
        pool = _pool
    futures = [pool.submit(in_kept_connection, fn, item) for item in items[1:]]
    first = fn(items[0])
    return [first] + [f.result() for f in futures]


def close_search_pool() -> None:
    """Stop the pool, then close every worker thread's kept connection (tests call it after each test)."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=True)
    close_worker_connections()


def get_retriever() -> HybridRetriever:
    global _retriever
    with _lock:
        if _retriever is None:
            _retriever = HybridRetriever(
                vectors=PgVectorStore(), keywords=keyword_store(), chunks=DjangoChunkStore(),
                embedder_for=_embedder_for, reranker_for=_reranker_for, max_workers=settings.ZHIKU_SEARCH_WORKERS,
                parallel_map=_parallel_map, reader=SettingsReader(), labels=DjangoLabelStore(),
            )
        return _retriever


def filters_from(values: dict | None) -> SearchFilters:
    """``SearchFilters`` from the API's checked ``filters`` (``knowledge.api.search.SearchFiltersInput``); none: no filter."""
    values = values or {}
    return SearchFilters(
        document_ids=tuple(dict.fromkeys(values.get("document_ids") or ())),
        source_names=tuple(dict.fromkeys(values.get("source_names") or ())),
        chunk_types=tuple(dict.fromkeys(values.get("chunk_types") or ())),
        metadata=tuple(values.get("metadata") or ()),
    )


@dataclass(frozen=True)
class Search:
    """One search as its caller asks it: what (``request``), over which KBs, as whom.

    The KBs are ``kb_ids`` looked up for ``user`` at ``min_role`` (a KB the user cannot read is a 404, never
    skipped), or ``kbs`` the caller already resolved and checked in this request, with the ``scope`` that
    check resolved (a chat turn, an API key): their access is not looked up again (no ``scope``: read now).
    ``overrides`` replace fields of every KB's ``KBSearchConfig`` (an assistant's top_k and verdict lines);
    ``calibration`` replaces every KB's (slope, offset): recalibration passes (1, 0) to read the raw logit.
    """

    request: SearchRequest
    user: Any = None
    kb_ids: Sequence[Any] = ()
    kbs: Sequence[KnowledgeBase] = ()
    scope: AccessScope | None = None
    min_role: Role = Role.VIEWER
    overrides: Mapping[str, Any] | None = None
    calibration: tuple[float, float] | None = None


def search(asked: Search) -> RetrievalResult:
    """The one search entry, for every caller (REST, chat, assistants, MCP, Dify, evaluation, calibration).

    Bad input is a 400 checked before any KB is looked up; the payload cache is ``search_cache``'s, above this.
    """
    request, kbs, scope = resolve(asked)
    return run(request, kbs, scope=scope, asked=asked)


def resolve(asked: Search) -> tuple[SearchRequest, list[KnowledgeBase], AccessScope]:
    """The checked request, the KBs and what the caller may read in them (404 for a KB they cannot read)."""
    if asked.kbs:
        request, _ = _checked(asked.request, [kb.pk for kb in asked.kbs])
        kbs = list(asked.kbs)
        scope = asked.scope if asked.scope is not None else scope_for(user=asked.user, kbs=kbs)
        return request, kbs, scope
    request, kb_ids = _checked(asked.request, asked.kb_ids)
    kbs, scope = kbs_get_for_user(user=asked.user, kb_ids=kb_ids, min_role=asked.min_role)
    return request, list(kbs), scope


def _checked(request: SearchRequest, kb_ids: Sequence) -> tuple[SearchRequest, list[int]]:
    """The request with its query stripped and the KB ids, or a 400 for bad input (checked before any KB is
    looked up; knowledge/services/query_input.py has the question and KB rules)."""
    query, mode, top_k = query_clean(request.query), request.mode, request.top_k
    ids = kb_ids_clean(list(kb_ids) if isinstance(kb_ids, (list, tuple)) else kb_ids)
    if mode not in MODES:
        raise fail(KnowledgeError.INVALID_MODE, modes=", ".join(MODES))
    if top_k is not None and not 1 <= int(top_k) <= MAX_TOP_K:
        raise fail(KnowledgeError.INVALID_TOP_K, limit=MAX_TOP_K)
    return replace(request, query=query), ids


def run(request: SearchRequest, kbs: Sequence[KnowledgeBase], *, scope: AccessScope, asked: Search) -> RetrievalResult:
    """The retriever over ``kbs``' settings, with the caller's overrides (``request`` already checked)."""
    configs = [kb_search_config(kb) for kb in kbs]
    if asked.overrides:
        configs = [replace(c, **asked.overrides) for c in configs]
    if asked.calibration is not None:
        calibration = cast(tuple[float, float], tuple(asked.calibration))  # (slope, offset)
        configs = [replace(c, calibration=calibration) for c in configs]
    try:
        return get_retriever().search(request, configs, scope=scope)
    except ValueError as exc:
        raise fail(KnowledgeError.INVALID_SEARCH, detail=str(exc)) from exc


def payload(result: RetrievalResult, *, debug: bool = False) -> dict[str, Any]:
    """The API/websocket shape of a result; every score under its own name."""
    results = []
    for c in result.candidates:
        item = candidate_json(c)
        item["document"]["external_id"] = c.metadata.get("external_id", "") if isinstance(c.metadata, dict) else ""
        item.update(ordinal=c.ordinal, metadata=c.metadata)
        if c.reader_unit is not None:
            item["reader_unit"] = dict(c.reader_unit)
        results.append(item)
    out: dict[str, Any] = {
        "verdict": result.verdict, "hit": result.hit, "relevance": result.relevance, "threshold": result.threshold,
        "answer_threshold": result.answer_threshold, "reader": result.reader, "verdict_by": result.verdict_by,
        "not_found_text": not_found_text(result.not_found_text) if not result.hit else "",  # knowledge/not_found.py
        "mode": result.mode, "reranker": result.reranker, "keyword_available": result.keyword_available,
        "notes": list(result.notes), "results": results,
        "timings": {t.name: round(t.ms, 2) for t in result.timings},
    }
    if debug and getattr(result, "debug", None) is not None:
        out["debug"] = jsonable(result.debug)
    return out
