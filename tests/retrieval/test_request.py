"""One request object and one tuning object: what a search asks for and the knobs it runs with."""
from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from knowledge.retrieval.memory import CharNgramEmbedder, MemoryStore
from knowledge.retrieval.pipeline import HybridRetriever, SearchRequest, Tuning
from knowledge.retrieval.protocols import SearchFilters
from tests.retrieval.test_pipeline import SCOPE, kb_config, records_for, retriever_for


@pytest.fixture
def setup():
    embedder, kb = CharNgramEmbedder(), kb_config()
    store = MemoryStore()
    store.add_kb(kb, records_for(kb.kb_id, embedder))
    return store, embedder, kb


def ranked(result) -> list[tuple[int, float | None, float | None]]:
    return [(c.chunk_id, c.final_score, c.relevance) for c in result.candidates]


def test_a_search_request_searches_as_its_fields_given_by_keyword(setup):
    store, embedder, kb = setup
    retriever = retriever_for(store, {"chars": embedder})
    request = SearchRequest(query="退货运费谁承担", top_k=2, filters=SearchFilters(chunk_types=("text",)))
    by_request = retriever.search(request, [kb], scope=SCOPE)
    by_keyword = retriever.search("退货运费谁承担", [kb], scope=SCOPE, top_k=2,
                                  filters=SearchFilters(chunk_types=("text",)))
    assert by_request.candidates and len(by_request.candidates) <= 2
    assert ranked(by_request) == ranked(by_keyword)
    with pytest.raises(TypeError):
        retriever.search(request, [kb], scope=SCOPE, top_k=1)
    with pytest.raises(FrozenInstanceError):
        request.top_k = 5  # type: ignore[misc]


def test_the_cache_key_holds_every_option_but_debug():
    plain, continued = SearchRequest(query="q"), SearchRequest(query="q", continue_announced=True)
    assert plain.cache_key_parts() != continued.cache_key_parts()
    assert SearchRequest(query="q", debug=True).cache_key_parts() == plain.cache_key_parts()
    assert set(plain.cache_key_parts()) == set(SearchRequest.__dataclass_fields__) - {"debug"}


def test_knobs_come_as_one_frozen_tuning_or_by_keyword(setup):
    store, embedder, kb = setup
    embedders = {"chars": embedder}
    by_tuning = retriever_for(store, embedders, tuning=Tuning(judge_rerank=0.0, rescue_top=1))
    by_keyword = retriever_for(store, embedders, judge_rerank=0.0, rescue_top=1)
    assert by_tuning.tuning == by_keyword.tuning and by_keyword.judge_rerank == 0.0
    query = "积分有效期多久"
    assert ranked(by_tuning.search(query, [kb], scope=SCOPE)) == ranked(by_keyword.search(query, [kb], scope=SCOPE))
    with pytest.raises(TypeError):
        Tuning(no_such_knob=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        HybridRetriever(vectors=store.vectors, keywords=store.keywords, chunks=store.chunks,
                        embedder_for=embedders.get, reranker_for=lambda kb: None, tuning=Tuning(), rescue_top=1)
    with pytest.raises(FrozenInstanceError):
        by_tuning.tuning.rescue_top = 2  # type: ignore[misc]


def test_the_judge_keeps_the_key_it_reordered_by_on_each_candidate(setup):
    store, embedder, kb = setup
    result = retriever_for(store, {"chars": embedder}).search("退货运费谁承担", [kb], scope=SCOPE)
    judged = [c for c in result.candidates if c.judge_score is not None]
    assert judged, "hybrid search reorders its judged head"
    # Within one KB the judged head is in descending judge_score order.
    keys = [c.judge_score for c in judged]
    assert keys == sorted(keys, reverse=True)
    off = retriever_for(store, {"chars": embedder}, judge_rerank=0.0).search("退货运费谁承担", [kb], scope=SCOPE)
    assert all(c.judge_score is None for c in off.candidates)
