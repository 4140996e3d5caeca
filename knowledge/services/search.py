"""Search one or more KBs as a user: permissions, settings, caches, the hybrid retriever."""
from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from django.conf import settings
from django.db import connection

from knowledge.access import scope_for
from knowledge.dbconn import close_worker_connections, in_kept_connection
from knowledge.embeddings import get_embedder
from knowledge.errors import fail
from knowledge.jsonable import candidate_json, jsonable
from knowledge.models import KnowledgeBase, Role
from knowledge.retrieval.pipeline import MODES, HybridRetriever
from knowledge.retrieval.protocols import AccessScope, KBSearchConfig, SearchFilters
from knowledge.retrieval.request import SearchRequest
from knowledge.retrieval.rerank import CrossEncoderReranker
from knowledge.retrieval.types import RetrievalResult
from knowledge.selectors import kbs_get_for_user
from knowledge.ingestion.text import analyzer_config
from knowledge.services.query_input import MAX_TOP_K, kb_ids_clean, query_clean
from knowledge.keyword_store import keyword_store
from knowledge.stores import DjangoChunkStore, PgVectorStore, redis_client

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
        version=kb.version,
        calibration=(kb.calibration_slope, kb.calibration_offset),
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
                except Exception:  # noqa: BLE001
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

        return load(Path(settings.ZHIKU_READER_DIR))

    def read(self, question: str, windows) -> list[float]:
        reader = self.current()
        return reader.read(question, windows) if reader is not None else []


_pool: ThreadPoolExecutor | None = None


def _parallel_map(fn, items) -> list:
    """The first item on the caller's thread (its connection is open already: the access check used it), the
    others on a persistent pool whose threads keep their connections (``knowledge.dbconn``)."""
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
                parallel_map=_parallel_map, reader=SettingsReader(),
            )
        return _retriever


def search_filters(values: dict | None) -> SearchFilters:
    """``SearchFilters`` from the API's checked ``filters`` (``knowledge.api.search.SearchFiltersInput``); none: no filter."""
    values = values or {}
    return SearchFilters(
        document_ids=tuple(dict.fromkeys(values.get("document_ids") or ())),
        source_names=tuple(dict.fromkeys(values.get("source_names") or ())),
        chunk_types=tuple(dict.fromkeys(values.get("chunk_types") or ())),
        metadata=tuple(values.get("metadata") or ()),
    )


def search_run(*, user, kb_ids: Sequence, request: SearchRequest | None = None, min_role: Role = Role.VIEWER,
               calibration_override: tuple[float, float] | None = None, **options: Any) -> RetrievalResult:
    """Search the given KBs as ``user``. A KB the user cannot read is refused (404), never skipped.

    ``request`` is a ``SearchRequest``, or its fields come by keyword (``query=…, top_k=…``).
    ``calibration_override`` replaces every KB's (slope, offset): recalibration
    passes (1, 0) to read the judge's raw logit.
    """
    request, kb_ids = _checked(_request(request, options), kb_ids)
    kbs, scope = kbs_get_for_user(user=user, kb_ids=kb_ids, min_role=min_role)
    return _search(request, kbs, scope=scope, calibration_override=calibration_override)


def _request(request: SearchRequest | None, options: dict[str, Any]) -> SearchRequest:
    """The one request object, from a ``SearchRequest`` or from its fields given by keyword."""
    if request is None:
        return SearchRequest(**options)
    if options:
        raise TypeError("pass the options in the SearchRequest or by keyword, not both")
    return request


def _checked(request: SearchRequest, kb_ids: Sequence) -> tuple[SearchRequest, list[int]]:
    """The request with its query stripped and the KB ids, or a 400 for bad input (checked before any KB is
    looked up; knowledge/services/query_input.py has the question and KB rules)."""
    query, mode, top_k = query_clean(request.query), request.mode, request.top_k
    ids = kb_ids_clean(list(kb_ids) if isinstance(kb_ids, (list, tuple)) else kb_ids)
    if mode not in MODES:
        raise fail("invalid_mode", modes=", ".join(MODES))
    if top_k is not None and not 1 <= int(top_k) <= MAX_TOP_K:
        raise fail("invalid_top_k", limit=MAX_TOP_K)
    return replace(request, query=query), ids


def search_kbs(*, user, query: str, kbs: Sequence[KnowledgeBase], scope: AccessScope | None = None,
               merge_adjacent: bool = False, continue_announced: bool = False,
               overrides: dict[str, Any] | None = None) -> RetrievalResult:
    """A hybrid search of KBs already resolved and checked for ``user`` in this request (a chat turn's, by
    ``chat.services.turn_start``): their access is not looked up a second time. ``scope`` is what the same
    check resolved (``knowledge.selectors.kbs_get_for_user``); without it, it is read now (``scope_for``).
    ``overrides`` replace fields of every KB's ``KBSearchConfig`` (an assistant's top_k and verdict lines)."""
    request = SearchRequest(query=query_clean(query), merge_adjacent=merge_adjacent, continue_announced=continue_announced)
    return _search(request, kbs, scope=scope if scope is not None else scope_for(user=user, kbs=list(kbs)),
                   overrides=overrides)


def search_resolved(request: SearchRequest, kbs: Sequence[KnowledgeBase], *, scope: AccessScope,
                    overrides: dict[str, Any] | None = None) -> RetrievalResult:
    """A search of KBs the caller already resolved and checked, with ``scope`` from that check (an API key's
    search: ``assistants.services``); the request is checked here as ``search_run`` checks it."""
    request, _ = _checked(request, [kb.pk for kb in kbs])
    return _search(request, kbs, scope=scope, overrides=overrides)


def _search(request: SearchRequest, kbs: Sequence[KnowledgeBase], *, scope: AccessScope,
            calibration_override: tuple[float, float] | None = None,
            overrides: dict[str, Any] | None = None) -> RetrievalResult:
    configs = [kb_search_config(kb) for kb in kbs]
    if overrides:
        configs = [replace(c, **overrides) for c in configs]
    if calibration_override is not None:
        configs = [replace(c, calibration=tuple(calibration_override)) for c in configs]
    try:
        return get_retriever().search(request, configs, scope=scope)
    except ValueError as exc:
        raise fail("invalid_search", detail=str(exc)) from exc


def result_payload(result: RetrievalResult, *, debug: bool = False) -> dict[str, Any]:
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
        "not_found_text": result.not_found_text if not result.hit else "",
        "mode": result.mode, "reranker": result.reranker, "keyword_available": result.keyword_available,
        "notes": list(result.notes), "results": results,
        "timings": {t.name: round(t.ms, 2) for t in result.timings},
    }
    if debug and getattr(result, "debug", None) is not None:
        out["debug"] = jsonable(result.debug)
    return out


def search_cached_payload(*, user, kb_ids: Sequence, request: SearchRequest | None = None, **options: Any) -> dict:
    """``search_run`` + ``result_payload``, cached in Redis as JSON under the KBs' versions (debug is never cached).

    ``request`` is a ``SearchRequest``, or its fields come by keyword, as for ``search_run``; every field
    that changes the result is part of the cache key (``SearchRequest.cache_key_parts``).

    Input and access are checked before the cache is read (as ``search_run``
    checks them), and what the caller may read is part of the key: a member
    removed or demoted since a result was cached gets a 404 or a result computed
    for the access they hold now, never the old one.
    """
    request, kb_ids = _checked(_request(request, options), kb_ids)
    kbs, scope = kbs_get_for_user(user=user, kb_ids=kb_ids)  # 404 before any cache is read
    client = None if request.debug else redis_client()
    key = None
    if client is not None:
        # Versions change with content; the two lines and the calibration change the verdict; the groups and
        # the KBs where the caller sees restricted documents (editor or above) decide what they may read.
        versions = sorted((kb.pk, kb.version, kb.score_threshold, kb.answer_threshold, kb.calibration_slope,
                           kb.calibration_offset) for kb in kbs)
        raw = json.dumps([user.pk, user.is_superuser, sorted(scope.group_ids), sorted(scope.full_access_kb_ids), versions,
                          list(kb_ids), request.cache_key_parts(), settings.ZHIKU_RERANK_MODEL,
                          settings.ZHIKU_READER],
                         default=str, ensure_ascii=False)
        key = settings.ZHIKU_REDIS_PREFIX + ":search:" + hashlib.sha256(raw.encode()).hexdigest()
        try:
            blob = client.get(key)
            if blob:
                payload = json.loads(blob)
                payload["cached"] = True
                return payload
        except Exception:  # noqa: BLE001
            pass
    result = _search(request, kbs, scope=scope)
    payload = result_payload(result, debug=request.debug)
    payload["cached"] = False
    if client is not None and key is not None:
        try:
            client.set(key, json.dumps(payload, ensure_ascii=False, default=str), ex=settings.ZHIKU_SEARCH_CACHE_TTL)
        except Exception:  # noqa: BLE001
            pass
    return payload
