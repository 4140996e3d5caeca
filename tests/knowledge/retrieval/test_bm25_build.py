"""Tests for knowledge.retrieval.bm25_build: the counting-sort CSR equals the counts, whatever the batch size."""
from __future__ import annotations

import random

import numpy as np
from rank_bm25 import BM25Okapi

from knowledge.retrieval.bm25 import BM25Index
from knowledge.retrieval.bm25_build import build_postings


def _dense(postings, n_docs: int) -> np.ndarray:
    matrix = np.zeros((len(postings.terms), n_docs), dtype=np.int64)
    for row in range(len(postings.terms)):
        start, end = postings.indptr[row], postings.indptr[row + 1]
        matrix[row, postings.cols[start:end]] = postings.tf[start:end]
    return matrix


def _corpus(seed: int = 3) -> list[list[str]]:
    rng = random.Random(seed)
    words = [f"词{i}" for i in range(40)]
    return [[rng.choice(words) for _ in range(rng.randint(0, 12))] for _ in range(60)]


def test_every_batch_size_gives_the_same_postings_with_sorted_columns():
    docs = _corpus()
    whole = build_postings(enumerate(docs), batch_tokens=10**9)
    expected = np.zeros((len(whole.terms), len(docs)), dtype=np.int64)
    for col, tokens in enumerate(docs):
        for token in tokens:
            expected[whole.terms.index(token), col] += 1
    for batch_tokens in (1, 2, 7, 50, 10**9):  # a batch may end inside a run of short documents or after one
        postings = build_postings(enumerate(docs), batch_tokens=batch_tokens)
        assert postings.terms == whole.terms  # first-appearance order across batches
        assert postings.cols.dtype == np.int32 and postings.tf.dtype == np.int32
        np.testing.assert_array_equal(_dense(postings, len(docs)), expected)
        for row in range(len(postings.terms)):
            run = postings.cols[postings.indptr[row]:postings.indptr[row + 1]]
            assert np.all(np.diff(run) > 0)  # one posting per document, in document order
        np.testing.assert_array_equal(postings.lengths, [len(d) for d in docs])


def test_small_batches_score_like_rank_bm25(monkeypatch):
    from knowledge.retrieval import bm25_build

    docs = _corpus(11)
    monkeypatch.setattr(bm25_build, "BATCH_TOKENS", 5)
    index = BM25Index.build(enumerate(docs))
    reference = BM25Okapi(docs)
    for query in (["词1", "词2"], ["词39", "词39", "没有"], ["词0"]):
        np.testing.assert_allclose(index.scores_for(query), reference.get_scores(query), rtol=1e-9, atol=1e-12)


def test_a_term_repeated_past_sixty_five_thousand_times_keeps_its_count():
    docs = [["常见"] * 70_000 + ["少见"], ["常见", "其他"]]
    postings = build_postings(enumerate(docs), batch_tokens=10)
    row = postings.terms.index("常见")
    assert postings.tf[postings.indptr[row]:postings.indptr[row + 1]].tolist() == [70_000, 1]


def test_documents_without_tokens_and_an_empty_corpus():
    postings = build_postings(enumerate([[], ["一"], []]), batch_tokens=1)
    assert postings.terms == ["一"] and postings.indptr.tolist() == [0, 1] and postings.cols.tolist() == [1]
    empty = build_postings([], batch_tokens=1)
    assert empty.terms == [] and empty.indptr.tolist() == [0] and empty.cols.shape == (0,)


def test_the_blob_encoded_a_few_postings_at_a_time_decodes_to_the_same_index(monkeypatch):
    from knowledge.retrieval import bm25_blob

    docs = _corpus(5) + [["词1"] * 300]  # a count past one byte
    index = BM25Index.build(enumerate(docs))
    whole = index.to_bytes()
    monkeypatch.setattr(bm25_blob, "_STEP", 7)  # steps that end inside rows and across row starts
    stepped = index.to_bytes()
    assert zlib_payload(stepped) == zlib_payload(whole)
    again = BM25Index.from_bytes(stepped)
    for name, array in index.state_arrays().items():
        np.testing.assert_array_equal(again.state_arrays()[name], array, err_msg=name)
    for query in (["词1"], ["词3", "词7"]):
        assert again.search(query, 10) == index.search(query, 10)


def zlib_payload(blob: bytes) -> bytes:
    import zlib

    from knowledge.retrieval.bm25_blob import _HEADER

    return zlib.decompress(blob[_HEADER.size:])
