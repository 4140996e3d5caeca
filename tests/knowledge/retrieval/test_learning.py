"""The learn stage over the in-memory stores: a matched label's passage first, a wrong one last, nothing when off,
never a chunk of another KB or one the caller may not read (knowledge/retrieval/learning.py)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from test_pipeline import SCOPE, kb_config, records_for, retriever_for

from knowledge.retrieval.memory import CharNgramEmbedder, MemoryStore
from knowledge.retrieval.pipeline import SearchRequest
from knowledge.retrieval.protocols import AccessScope, LabelMatch, SearchFilters

QUERY = "退货运费谁承担"


class Labels:
    """A label store holding fixed labels per KB (question → chunk ids), matched by the embedder's cosine."""

    def __init__(self, embedder: CharNgramEmbedder, labels: dict[int, list[tuple[str, tuple[int, ...], tuple[int, ...]]]]):
        self.embedder, self.labels, self.asked = embedder, labels, []

    def nearest(self, *, kb_id, embedding_model, query_vector, min_cosine, limit):
        self.asked.append(kb_id)
        out = []
        for n, (question, chunks, wrong) in enumerate(self.labels.get(kb_id, []), 1):
            cosine = float(np.dot(self.embedder.embed_query(question), query_vector))
            if cosine >= min_cosine:
                out.append(LabelMatch(label_id=n, question=question, cosine=cosine, chunk_ids=chunks, negative_chunk_ids=wrong))
        return sorted(out, key=lambda m: -m.cosine)[:limit]


def setup(labels, *, readable=None, learn=True):
    embedder = CharNgramEmbedder()
    store = MemoryStore(readable=readable)
    kb = kb_config(learn=learn)
    store.add_kb(kb, records_for(kb.kb_id, embedder))
    other = kb_config(kb_id=2, learn=learn)
    store.add_kb(other, records_for(2, embedder, first_id=101))
    label_store = Labels(embedder, labels)
    return retriever_for(store, {"chars": embedder}, labels=label_store), kb, other, label_store


def ids(result) -> list[int]:
    return [c.chunk_id for c in result.candidates]


def test_a_label_puts_its_passage_first_for_the_question_and_says_so_in_debug():
    plain, kb, _, _ = setup({}, learn=False)
    before = ids(plain.search(SearchRequest(query=QUERY, top_k=3, rerank=False), [kb], scope=SCOPE))
    target = 7  # 配送时效: not what the words say
    assert before[0] != target
    retriever, kb, _, _ = setup({1: [(QUERY, (target,), ())]})
    result = retriever.search(SearchRequest(query=QUERY, top_k=3, rerank=False, debug=True), [kb], scope=SCOPE)
    assert ids(result)[0] == target
    assert result.candidates[0].relevance is not None and result.candidates[0].relevance >= kb.threshold
    assert any(t.name == "learn" for t in result.timings)
    [move] = result.debug["learned"]
    assert move["chunk_id"] == target and move["label_id"] == 1 and move["action"] in ("boosted", "added")


def test_a_wrong_passage_goes_last():
    plain, kb, _, _ = setup({}, learn=False)
    first = ids(plain.search(SearchRequest(query=QUERY, top_k=8, rerank=False), [kb], scope=SCOPE))[0]
    retriever, kb, _, _ = setup({1: [(QUERY, (), (first,))]})
    after = ids(retriever.search(SearchRequest(query=QUERY, top_k=8, rerank=False), [kb], scope=SCOPE))
    assert after[0] != first and after[-1] == first


def test_learning_off_asks_no_label_and_changes_nothing():
    retriever, kb, _, labels = setup({1: [(QUERY, (7,), ())]}, learn=False)
    plain, _, _, _ = setup({}, learn=False)
    request = SearchRequest(query=QUERY, top_k=5, rerank=False)
    assert ids(retriever.search(request, [kb], scope=SCOPE)) == ids(plain.search(request, [kb], scope=SCOPE))
    assert labels.asked == []


def test_a_label_never_brings_a_chunk_of_another_kb():
    # A store that answered with another KB's chunk (101 is KB 2's) must not put it in KB 1's list.
    retriever, kb, _, _ = setup({1: [(QUERY, (101,), ())]})
    result = retriever.search(SearchRequest(query=QUERY, top_k=5, rerank=False), [kb], scope=SCOPE)
    assert all(c.kb_id == kb.kb_id for c in result.candidates) and 101 not in ids(result)


def test_a_label_never_brings_a_chunk_the_caller_may_not_read():
    hidden = 7
    retriever, kb, _, _ = setup({1: [(QUERY, (hidden,), ())]},
                                readable=lambda record, scope: record.chunk_id != hidden or scope.user_id == 1)
    result = retriever.search(SearchRequest(query=QUERY, top_k=8, rerank=False), [kb], scope=AccessScope(user_id=2))
    assert hidden not in ids(result)
    seen = retriever.search(SearchRequest(query=QUERY, top_k=8, rerank=False), [kb], scope=AccessScope(user_id=1))
    assert ids(seen)[0] == hidden


def test_a_filtered_search_adds_no_passage_from_outside_its_filters():
    retriever, kb, _, _ = setup({1: [(QUERY, (7,), ())]})
    narrowed = SearchRequest(query=QUERY, top_k=8, rerank=False, filters=SearchFilters(document_ids=(1001,)))
    assert 7 not in ids(retriever.search(narrowed, [kb], scope=SCOPE))


def test_a_far_question_does_not_match():
    retriever, kb, _, _ = setup({1: [("会员积分多久过期", (7,), ())]})
    plain, _, _, _ = setup({}, learn=False)
    request = SearchRequest(query=QUERY, top_k=3, rerank=False)
    assert ids(retriever.search(request, [kb], scope=SCOPE)) == ids(plain.search(request, [kb], scope=SCOPE))


def test_each_kb_learns_only_from_its_own_labels():
    retriever, kb, other, labels = setup({2: [(QUERY, (107,), ())]})
    result = retriever.search(SearchRequest(query=QUERY, top_k=3, rerank=False), [kb, replace(other, learn=False)],
                              scope=SCOPE)
    assert 107 not in ids(result) and labels.asked == [1]
