"""Tests for knowledge.retrieval.fusion: RRF, min-max fusion, dynamic weights, MMR."""

from __future__ import annotations

import pytest

from knowledge.retrieval.fusion import dynamic_weights, is_exact_lookup, minmax_fusion, mmr, ranked, rrf


def test_rrf_sums_reciprocal_ranks_from_one():
    scores = rrf([["a", "b", "c"], ["b", "d"]])
    assert scores == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 63, "d": 1 / 62})
    assert [k for k, _ in ranked(scores)] == ["b", "a", "d", "c"]


def test_rrf_applies_weights_and_k():
    scores = rrf([["a", "b"], ["b"]], weights=[0.25, 2.0], rrf_k=10)
    assert scores == pytest.approx({"a": 0.25 / 11, "b": 0.25 / 12 + 2.0 / 11})


def test_rrf_counts_a_repeated_id_at_its_first_rank():
    assert rrf([["a", "a", "b"]]) == pytest.approx({"a": 1 / 61, "b": 1 / 62})


def test_rrf_rejects_a_weight_per_list_mismatch():
    with pytest.raises(ValueError):
        rrf([["a"], ["b"]], weights=[1.0])


def test_unequal_rrf_weights_are_a_hard_priority():
    """With 0.6/0.4 and k 60, every vector-only candidate beats every BM25-only one.

    A vector-only hit at rank 30 scores 0.6/90 = 0.00667; BM25's own rank-1
    hit, missed by the vector path, scores 0.4/61 = 0.00656. That is why the
    seeds' fusion lost to BM25 alone on DRCD, and why the pipeline must not
    treat such weights as a gentle preference.
    """
    vector = [f"v{i}" for i in range(1, 31)]
    bm25 = ["b1", "b2", "b3"]
    scores = rrf([vector, bm25], weights=[0.6, 0.4])
    assert scores["v30"] == pytest.approx(0.6 / 90)
    assert scores["b1"] == pytest.approx(0.4 / 61)
    assert scores["v30"] > scores["b1"]
    order = [k for k, _ in ranked(scores)]
    assert order[:30] == vector and order[30:] == bm25
    # Equal weights restore the expected order: BM25's best beats the vector path's 30th.
    equal = rrf([vector, bm25], weights=[0.5, 0.5])
    assert equal["b1"] > equal["v30"]


def test_minmax_fusion_normalises_each_path_over_its_own_candidates():
    vector = {"a": 0.90, "b": 0.85, "c": 0.80}
    bm25 = {"a": 2.0, "d": 12.0, "b": 7.0}
    fused = minmax_fusion([vector, bm25], weights=[0.5, 0.5])
    assert fused == pytest.approx({"a": 0.5 * 1.0 + 0.5 * 0.0, "b": 0.5 * 0.5 + 0.5 * 0.5, "c": 0.0, "d": 0.5 * 1.0})


def test_minmax_fusion_uses_missing_for_absent_candidates():
    fused = minmax_fusion([{"a": 1.0, "b": 0.0}, {"b": 3.0, "c": 1.0}], missing=0.25)
    assert fused == pytest.approx({"a": 1.0 + 0.25, "b": 0.0 + 1.0, "c": 0.25 + 0.0})


def test_minmax_fusion_maps_all_equal_scores_to_one_and_ignores_empty_paths():
    assert minmax_fusion([{"a": 3.0, "b": 3.0}, {}]) == pytest.approx({"a": 1.0, "b": 1.0})


@pytest.mark.parametrize(
    "query",
    [
        "ERR_1042 是什么意思",
        "升级到 v2.3.1 后报错",
        "SKU-123 的库存",
        "“退款流程”在哪里",
        "「年假」怎么算",
        "getUserName 返回空",
        "/etc/nginx/nginx.conf 怎么配置",
        "settings.py 在哪",
        "错误码 1042",
        "报错404怎么办",
        "iPhone15 的电池",
        "ＥＲＲ＿１０４２",
    ],
)
def test_dynamic_weights_favour_keywords_for_exact_lookups(query):
    assert is_exact_lookup(query)
    assert dynamic_weights(query, (0.5, 0.5)) == (0.2, 0.8)


@pytest.mark.parametrize(
    "query",
    ["如何申请退款", "公司的年假政策是什么", "What is the refund policy?", "2019年的营收是多少", "Python 怎么安装"],
)
def test_dynamic_weights_keep_the_base_for_ordinary_questions(query):
    assert not is_exact_lookup(query)
    assert dynamic_weights(query, (0.6, 0.4)) == (0.6, 0.4)


def test_dynamic_weights_take_custom_keyword_heavy_weights():
    assert dynamic_weights("ERR_1042", (0.5, 0.5), keyword_heavy=(0.3, 0.7)) == (0.3, 0.7)


SIMILAR = {frozenset(("a", "a2")): 0.99}


def _similarity(x: str, y: str) -> float:
    return SIMILAR.get(frozenset((x, y)), 0.1)


def test_mmr_skips_a_near_duplicate():
    relevance = {"a": 1.0, "a2": 0.99, "b": 0.8, "c": 0.7}
    # After a: the duplicate a2 scores 0.7*0.99 - 0.3*0.99 = 0.396, below
    # b (0.7*0.8 - 0.3*0.1 = 0.53) and c (0.7*0.7 - 0.3*0.1 = 0.46), though it is more relevant.
    assert mmr(["a", "a2", "b", "c"], relevance, _similarity, lambda_=0.7, top_k=2) == ["a", "b"]
    assert mmr(["a", "a2", "b", "c"], relevance, _similarity, lambda_=0.7, top_k=4) == ["a", "b", "c", "a2"]


def test_mmr_with_lambda_one_is_plain_relevance_order():
    relevance = {"a": 1.0, "a2": 0.99, "b": 0.8}
    assert mmr(["b", "a2", "a"], relevance, _similarity, lambda_=1.0, top_k=3) == ["a", "a2", "b"]


def test_mmr_handles_fewer_candidates_than_top_k():
    assert mmr([], {}, _similarity, top_k=3) == []
    assert mmr(["a"], {"a": 0.3}, _similarity, top_k=3) == ["a"]
