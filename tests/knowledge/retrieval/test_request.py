"""One request object and one tuning object: what a search asks for and the knobs it runs with."""
from __future__ import annotations

from dataclasses import FrozenInstanceError, replace

import pytest

from knowledge.retrieval.memory import CharNgramEmbedder, MemoryStore
from knowledge.retrieval.pipeline import HybridRetriever, SearchRequest, Tuning
from knowledge.retrieval.protocols import SearchFilters
from tests.knowledge.retrieval.test_pipeline import SCOPE, kb_config, records_for, retriever_for


@pytest.fixture
def setup():
    embedder, kb = CharNgramEmbedder(), kb_config()
    store = MemoryStore()
    store.add_kb(kb, records_for(kb.kb_id, embedder))
    return store, embedder, kb


def ranked(result) -> list[tuple[int, float | None, float | None]]:
    return [(c.chunk_id, c.final_score, c.relevance) for c in result.candidates]


def test_a_search_request_carries_every_option_of_the_search(setup):
    store, embedder, kb = setup
    retriever = retriever_for(store, {"chars": embedder})
    request = SearchRequest(query="退货运费谁承担", top_k=2, filters=SearchFilters(chunk_types=("text",)))
    result = retriever.search(request, [kb], scope=SCOPE)
    assert result.candidates and len(result.candidates) <= 2
    assert ranked(retriever.search(replace(request), [kb], scope=SCOPE)) == ranked(result)
    only = retriever.search(replace(request, filters=SearchFilters(document_ids=(1002,))), [kb], scope=SCOPE)
    assert only.candidates and {c.document_id for c in only.candidates} == {1002}
    with pytest.raises(TypeError):  # the options travel in the request, never by keyword
        retriever.search(request, [kb], scope=SCOPE, top_k=1)  # type: ignore[call-arg]
    with pytest.raises(FrozenInstanceError):
        request.top_k = 5  # type: ignore[misc]


def test_the_cache_key_holds_every_option_but_debug():
    plain, continued = SearchRequest(query="q"), SearchRequest(query="q", continue_announced=True)
    assert plain.cache_key_parts() != continued.cache_key_parts()
    assert SearchRequest(query="q", debug=True).cache_key_parts() == plain.cache_key_parts()
    assert set(plain.cache_key_parts()) == set(SearchRequest.__dataclass_fields__) - {"debug"}


def test_knobs_come_as_one_frozen_tuning(setup):
    store, embedder, kb = setup
    embedders = {"chars": embedder}
    assert retriever_for(store, embedders).tuning == Tuning()  # none given: the shipped knobs
    tuned = retriever_for(store, embedders, tuning=Tuning(judge_rerank=0.0, rescue_top=1))
    assert (tuned.tuning.judge_rerank, tuned.tuning.rescue_top) == (0.0, 1)
    assert not hasattr(tuned, "judge_rerank")  # the knobs read back from the tuning only
    assert tuned.search(SearchRequest(query="积分有效期多久"), [kb], scope=SCOPE).candidates
    with pytest.raises(TypeError):
        Tuning(no_such_knob=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):  # a knob by keyword is refused: it belongs in the Tuning
        HybridRetriever(vectors=store.vectors, keywords=store.keywords, chunks=store.chunks,  # type: ignore[call-arg]
                        embedder_for=embedders.get, reranker_for=lambda kb: None, rescue_top=1)
    with pytest.raises(FrozenInstanceError):
        tuned.tuning.rescue_top = 2  # type: ignore[misc]


def test_the_judge_keeps_the_key_it_reordered_by_on_each_candidate(setup):
    store, embedder, kb = setup
    result = retriever_for(store, {"chars": embedder}).search(SearchRequest(query="退货运费谁承担"), [kb], scope=SCOPE)
    judged = [c for c in result.candidates if c.judge_score is not None]
    assert judged, "hybrid search reorders its judged head"
    # Within one KB the judged head is in descending judge_score order.
    keys = [c.judge_score for c in judged]
    assert keys == sorted(keys, reverse=True)
    off = retriever_for(store, {"chars": embedder}, tuning=Tuning(judge_rerank=0.0)).search(
        SearchRequest(query="退货运费谁承担"), [kb], scope=SCOPE)
    assert all(c.judge_score is None for c in off.candidates)
