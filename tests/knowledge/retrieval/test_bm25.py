"""Tests for knowledge.retrieval.bm25: rank_bm25-exact scores, search, updates, serialisation."""

from __future__ import annotations

import io
import json
import pickle
import random
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from knowledge.retrieval import bm25 as bm25_module
from knowledge.retrieval.bm25 import FORMAT_VERSION, MAGIC, BM25Index, IndexFormatError


def _assert_same_scores(ours: np.ndarray, reference: np.ndarray) -> None:
    np.testing.assert_allclose(ours, reference, rtol=1e-9, atol=1e-12)


# A corpus with every edge: terms in more than half the docs (negative idf →
# epsilon floor), a term in exactly half (idf 0), repeated terms, an empty doc.
SMALL = [
    ["苹果", "香蕉", "苹果", "常见"],
    ["香蕉", "常见", "水果"],
    ["常见", "橙子", "常见", "常见"],
    [],
    ["常见", "葡萄", "苹果", "半数"],
    ["常见", "半数", "西瓜"],
    ["半数", "桃子", "常见"],
    ["常见", "苹果"],
]


def test_scores_match_rank_bm25_on_real_chinese_passages(cmrc):
    docs, queries = cmrc
    index = BM25Index.build(enumerate(docs))
    reference = BM25Okapi(docs)
    assert index.avgdl == pytest.approx(reference.avgdl, rel=1e-12)
    for q in queries:
        _assert_same_scores(index.scores_for(q), reference.get_scores(q))


def test_scores_match_rank_bm25_with_negative_idf_repeats_unknown_and_empty_doc():
    index = BM25Index.build(enumerate(SMALL))
    reference = BM25Okapi(SMALL)
    # 常见 is in 7 of 8 docs: its idf is negative, so both floor it to epsilon * mean idf.
    assert index.idf("常见") == pytest.approx(reference.idf["常见"], rel=1e-12)
    assert index.idf("常见") == pytest.approx(0.25 * reference.average_idf, rel=1e-12)
    assert index.idf("半数") == pytest.approx(reference.idf["半数"], rel=1e-12)
    for q in (
        ["苹果"],
        ["常见"],
        ["苹果", "苹果", "香蕉"],  # repeated query token counts twice
        ["不存在的词"],  # unknown token contributes nothing
        ["不存在的词", "橙子", "常见", "半数"],
        [],
    ):
        _assert_same_scores(index.scores_for(q), reference.get_scores(q))
    assert index.scores_for(["苹果"])[3] == 0.0  # the empty doc


def test_scores_match_rank_bm25_when_the_mean_idf_is_negative():
    docs = [["共同", "一"], ["共同", "二"], ["共同", "一"], ["共同"], ["共同", "一", "二"]]
    index = BM25Index.build(enumerate(docs))
    reference = BM25Okapi(docs)
    assert reference.average_idf < 0
    for q in (["共同"], ["一", "二"], ["二", "共同", "共同"]):
        _assert_same_scores(index.scores_for(q), reference.get_scores(q))


def test_scores_match_rank_bm25_with_other_parameters():
    index = BM25Index.build(enumerate(SMALL), k1=1.2, b=0.5, epsilon=0.1)
    reference = BM25Okapi(SMALL, k1=1.2, b=0.5, epsilon=0.1)
    _assert_same_scores(index.scores_for(["苹果", "常见", "桃子"]), reference.get_scores(["苹果", "常见", "桃子"]))


def test_search_returns_matching_docs_by_score_then_id():
    index = BM25Index.build([(10 + i, doc) for i, doc in enumerate(SMALL)])
    scores = index.scores_for(["苹果", "香蕉"])
    results = index.search(["苹果", "香蕉"], top_k=10)
    matched = [(int(i), float(s)) for i, s in zip(index.ids, scores, strict=True) if i - 10 in (0, 1, 4, 7)]
    assert results == sorted(matched, key=lambda r: (-r[1], r[0]))
    assert [doc_id for doc_id, _ in index.search(["苹果", "香蕉"], top_k=2)] == [r[0] for r in results[:2]]


def test_search_breaks_ties_by_ascending_id_across_the_cut():
    docs = [(id_, ["相同", "文本"]) for id_ in (9, 3, 7, 5, 1)] + [(100, ["无关"])]
    index = BM25Index.build(docs)
    assert [doc_id for doc_id, _ in index.search(["相同"], top_k=3)] == [1, 3, 5]
    assert [doc_id for doc_id, _ in index.search(["相同"], top_k=10)] == [1, 3, 5, 7, 9]


def test_search_with_no_match_or_no_room_is_empty():
    index = BM25Index.build(enumerate(SMALL))
    assert index.search(["不存在的词"], top_k=5) == []
    assert index.search([], top_k=5) == []
    assert index.search(["苹果"], top_k=0) == []


def test_allowed_ids_filter_before_the_top_k_cut(cmrc):
    docs, queries = cmrc
    index = BM25Index.build((1000 + i, d) for i, d in enumerate(docs))
    q = queries[0]
    full = index.search(q, top_k=len(docs))
    assert len(full) > 3
    banned = {full[0][0], full[1][0]}
    allowed = {int(i) for i in index.ids} - banned
    expected = [r for r in full if r[0] not in banned][:3]
    assert index.search(q, top_k=3, allowed_ids=allowed) == expected
    assert index.search(q, top_k=3, allowed_ids=np.array(sorted(allowed))) == expected
    assert index.search(q, top_k=3, allowed_ids=set()) == []


def test_idf_and_query_idf_sum():
    index = BM25Index.build(enumerate(SMALL))
    reference = BM25Okapi(SMALL)
    n = len(SMALL)
    assert index.idf("不存在的词") == 0.0
    assert index.max_idf() == pytest.approx(np.log((n + 0.5) / 0.5))
    expected = 2 * reference.idf["苹果"] + reference.idf["桃子"] + np.log((n + 0.5) / 0.5)
    assert index.query_idf_sum(["苹果", "苹果", "桃子", "不存在的词"]) == pytest.approx(expected)


def test_matched_tokens_lists_the_query_tokens_a_doc_contains():
    index = BM25Index.build([(10 + i, d) for i, d in enumerate(SMALL)])
    query = ["苹果", "橙子", "常见", "苹果", "不存在的词"]
    assert index.matched_tokens(10, query) == ["苹果", "常见", "苹果"]
    assert index.matched_tokens(12, query) == ["橙子", "常见"]
    assert index.matched_tokens(13, query) == []  # the empty doc
    assert index.matched_tokens(999, query) == []
    updated = BM25Index.from_bytes(index.with_changes(remove_ids=[11]).to_bytes())
    assert updated.matched_tokens(12, query) == ["橙子", "常见"]


def test_build_rejects_duplicate_ids():
    with pytest.raises(ValueError):
        BM25Index.build([(1, ["甲"]), (1, ["乙"])])


def test_empty_index_searches_and_roundtrips():
    index = BM25Index.build([])
    assert index.n_docs == 0 and index.search(["甲"], top_k=3) == []
    assert index.scores_for(["甲"]).shape == (0,)
    assert BM25Index.from_bytes(index.to_bytes()).n_docs == 0


# --- serialisation ---------------------------------------------------------------


def test_roundtrip_gives_identical_scores(cmrc):
    docs, queries = cmrc
    index = BM25Index.build((5000 + i, d) for i, d in enumerate(docs))
    loaded = BM25Index.from_bytes(index.to_bytes())
    np.testing.assert_array_equal(loaded.ids, index.ids)
    assert (loaded.n_docs, loaded.avgdl, loaded.n_terms) == (index.n_docs, index.avgdl, index.n_terms)
    for q in queries[:20]:
        np.testing.assert_array_equal(loaded.scores_for(q), index.scores_for(q))
        assert loaded.search(q, top_k=5) == index.search(q, top_k=5)


def test_loading_never_unpickles(monkeypatch):
    blob = BM25Index.build(enumerate(SMALL)).to_bytes()

    def forbidden(*args, **kwargs):
        raise AssertionError("pickle used while loading a BM25 index")

    monkeypatch.setattr(pickle, "load", forbidden)
    monkeypatch.setattr(pickle, "loads", forbidden)
    monkeypatch.setattr(pickle, "Unpickler", forbidden)
    loaded = BM25Index.from_bytes(blob)
    assert loaded.search(["苹果"], top_k=1) == BM25Index.build(enumerate(SMALL)).search(["苹果"], top_k=1)


def test_a_blob_holding_a_pickled_array_is_rejected():
    # Same layout as to_bytes, but the ids array is an object array: loading it
    # would need pickle, which from_bytes refuses.
    buf = io.BytesIO()
    meta = json.dumps({"k1": 1.5, "b": 0.75, "epsilon": 0.25, "n_docs": 1, "terms": []}).encode()
    buf.write(struct.pack("<Q", len(meta)) + meta)
    np.lib.format.write_array(buf, np.array([1], dtype=object), allow_pickle=True)
    for _ in range(4):
        np.lib.format.write_array(buf, np.zeros(1, dtype=np.int64))
    blob = struct.pack("<6sH", MAGIC, FORMAT_VERSION) + zlib.compress(buf.getvalue())
    with pytest.raises(IndexFormatError):
        BM25Index.from_bytes(blob)


@pytest.mark.parametrize(
    "mangle",
    [
        lambda blob: b"PICKLE" + blob[6:],  # wrong magic
        lambda blob: blob[:6] + struct.pack("<H", FORMAT_VERSION + 1) + blob[8:],  # future version
        lambda blob: blob[: len(blob) // 2],  # truncated
        lambda blob: blob[:20] + bytes(b ^ 0xFF for b in blob[20:40]) + blob[40:],  # corrupted
        lambda blob: b"",
    ],
    ids=["magic", "version", "truncated", "corrupted", "empty"],
)
def test_foreign_or_damaged_blobs_raise_index_format_error(mangle):
    blob = BM25Index.build(enumerate(SMALL)).to_bytes()
    with pytest.raises(IndexFormatError):
        BM25Index.from_bytes(mangle(blob))
    assert issubclass(IndexFormatError, ValueError)


def test_wrong_version_error_says_to_rebuild():
    blob = BM25Index.build(enumerate(SMALL)).to_bytes()
    with pytest.raises(IndexFormatError, match="rebuild"):
        BM25Index.from_bytes(blob[:6] + struct.pack("<H", 99) + blob[8:])


# --- incremental updates ---------------------------------------------------------


def test_with_changes_equals_a_fresh_build(cmrc):
    docs, queries = cmrc
    corpus = {2000 + i: d for i, d in enumerate(docs[:250])}
    index = BM25Index.build(corpus.items())
    removed = [2000 + i for i in range(0, 250, 7)] + [99999]  # an unknown id is ignored
    added = [(3000 + i, d) for i, d in enumerate(docs[250:])] + [(4000, ["全新的词", "全新的词", "另一个新词"]), (4001, [])]
    updated = index.with_changes(remove_ids=removed, add_docs=added)

    expected_docs = [(i, d) for i, d in corpus.items() if i not in removed] + added
    fresh = BM25Index.build(expected_docs)
    np.testing.assert_array_equal(updated.ids, fresh.ids)
    assert (updated.n_docs, updated.avgdl, updated.n_terms) == (fresh.n_docs, fresh.avgdl, fresh.n_terms)
    for q in queries[:20] + [["全新的词"], ["另一个新词", "全新的词", "不存在的词"]]:
        np.testing.assert_allclose(updated.scores_for(q), fresh.scores_for(q), rtol=1e-12, atol=1e-15)
        assert [i for i, _ in updated.search(q, top_k=5)] == [i for i, _ in fresh.search(q, top_k=5)]
    for doc_id in (2001, 2249, 3000, 3049, 4000, 4001):
        for q in queries[:10] + [["全新的词", "另一个新词"]]:
            assert updated.matched_tokens(doc_id, q) == fresh.matched_tokens(doc_id, q)
    # The original is untouched.
    assert index.n_docs == 250


def test_with_changes_drops_terms_no_document_holds_any_more():
    index = BM25Index.build(enumerate(SMALL))
    updated = index.with_changes(remove_ids=[2])  # the only doc with 橙子
    fresh = BM25Index.build((i, d) for i, d in enumerate(SMALL) if i != 2)
    reference = BM25Okapi([d for i, d in enumerate(SMALL) if i != 2])
    assert updated.n_terms == fresh.n_terms == index.n_terms - 1
    assert updated.idf("橙子") == 0.0
    # The mean idf (hence the epsilon floor) is over live terms only, as in rank_bm25.
    assert updated.average_idf == pytest.approx(reference.average_idf, rel=1e-12)
    _assert_same_scores(updated.scores_for(["常见", "苹果"]), reference.get_scores(["常见", "苹果"]))


def test_with_changes_replaces_a_doc_removed_in_the_same_call():
    index = BM25Index.build(enumerate(SMALL))
    updated = index.with_changes(remove_ids=[0], add_docs=[(0, ["新版本", "苹果"])])
    assert 0 in updated and updated.n_docs == index.n_docs
    assert updated.search(["新版本"], top_k=1)[0][0] == 0


def test_with_changes_rejects_adding_an_indexed_id():
    index = BM25Index.build(enumerate(SMALL))
    with pytest.raises(ValueError):
        index.with_changes(add_docs=[(1, ["重复"])])


def test_retrieval_core_imports_neither_django_nor_pickle():
    package = Path(bm25_module.__file__).parent
    for path in package.glob("*.py"):
        for line in path.read_text(encoding="utf-8").splitlines():
            words = line.split()
            if words[:1] in (["import"], ["from"]) and len(words) > 1:
                module = words[1].split(".")[0]
                assert module not in ("django", "pickle"), f"{path.name}: {line.strip()}"


def test_a_build_over_more_tokens_than_one_batch_scores_like_rank_bm25():
    """The build numbers terms a batch of a million tokens at a time: across batches, same scores as rank_bm25."""
    rng = random.Random(7)
    vocabulary = [f"词{i}" for i in range(3000)]
    docs = [[rng.choice(vocabulary) for _ in range(rng.randint(300, 700))] for _ in range(2200)]
    assert sum(map(len, docs)) > 1_000_000  # more than one batch
    docs.append(["只在最后一批"] * 3)  # a term first seen after the first batch
    index = BM25Index.build(enumerate(docs))
    reference = BM25Okapi(docs)
    for q in (["词1", "词2999"], ["只在最后一批"], ["词17", "只在最后一批", "没有"]):
        _assert_same_scores(index.scores_for(q), reference.get_scores(q))
    assert index.search(["只在最后一批"], 5)[0][0] == len(docs) - 1
