"""The relevance judgement: signals → p(answerable) in [0, 1], and the threshold → hit / "not found".

Meaning of ``relevance``
    The estimated probability that the knowledge base holds the answer to the
    question, judged from the top result's evidence, under equal prior odds
    (the model is fitted with balanced class weights, so 0.5 means "as likely
    answerable as not", whatever the share of unanswerable questions a KB
    gets). ``hit = relevance >= kb.threshold``; the default threshold 0.5 is
    that even-odds point.

Signals (bench/BASELINES.md, "Combining signals"); every one is in [0, 1] or
close, and ``None`` when its path did not run:

* ``idf_share``   Σ idf of the query tokens found in the judged passage ÷ Σ
  idf of all query tokens, tokens absent from the corpus counting the highest
  idf (``BM25Index.query_idf_sum``). The strongest single signal.
* ``token_share`` share of the query's (non-stop-word) tokens found in BM25's
  top passage.
* ``bm25_ratio``  BM25's top score ÷ Σ idf of the query tokens.
* ``cosine``      top-1 cosine of the vector path.
* ``cosine_gap``  that cosine minus the mean cosine of the vector path's top 10.
* ``rerank``      a cross-encoder's score, when one ran. No Chinese
  cross-encoder can be run offline here, so no default model uses it; fit one
  with the harness where a model is available.

Models: one logistic regression per set of available signals — ``hybrid``
(all five lexical and vector signals), ``keyword`` (the three lexical ones;
keyword-only mode) and ``vector`` (the two cosine ones; keyword index
unavailable or the query has no indexable token). ``Judge.probability`` picks
the richest model whose signals are all present.

Fitting (reproduce with ``python scripts/tune_retrieval.py judge``): on each
bench split (cmrc2018/dev, drcd/dev) the 300 questions with the smallest
``sha1(query id)`` have their relevant passages removed from the corpus
(label 0, unanswerable); the other questions stay answerable (label 1). The
signals come from ``HybridRetriever.search(debug=True)`` with the default
settings over those reduced corpora. ``fit_logistic`` (Newton / IRLS on
standardised signals, L2 1e-2, balanced class weights) is run on the two
splits pooled; coefficients are converted back to raw signal units and
stored below. Held-out figures are in the harness output and the commit
message: the fit is made on one half of the questions (by id hash) and
measured on the other, then refitted on all of them for the constants below.

Per-candidate ``relevance``: the top candidate's is the query-level
judgement. Every other candidate gets the same model with its own evidence in
place of the top passage's (its own ``idf_share``, its own cosine and gap),
capped at the top candidate's value, so no result claims more than the
judgement the hit decision was made on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Mapping, Sequence

import numpy as np

from .bm25 import BM25Index

SIGNALS: tuple[str, ...] = ("idf_share", "token_share", "bm25_ratio", "cosine", "cosine_gap", "rerank")


@dataclass(frozen=True)
class JudgeSignals:
    """The evidence one judgement is made on; ``None`` where that path did not run."""

    idf_share: float | None = None
    token_share: float | None = None
    bm25_ratio: float | None = None
    cosine: float | None = None
    cosine_gap: float | None = None
    rerank: float | None = None

    def as_dict(self) -> dict[str, float | None]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def with_candidate(self, *, idf_share: float | None, cosine: float | None, mean_top10: float | None) -> "JudgeSignals":
        """These signals with one passage's own evidence in place of the top passage's."""
        gap = None if cosine is None or mean_top10 is None else cosine - mean_top10
        return replace(
            self,
            idf_share=idf_share if self.idf_share is not None else None,
            cosine=cosine if self.cosine is not None else None,
            cosine_gap=gap if self.cosine_gap is not None else None,
        )


@dataclass(frozen=True)
class LogisticModel:
    """p = σ(intercept + Σ weight_i · signal_i), over raw signal values."""

    name: str
    features: tuple[str, ...]
    weights: tuple[float, ...]
    intercept: float

    def applies_to(self, signals: JudgeSignals) -> bool:
        return all(getattr(signals, f) is not None for f in self.features)

    def logit(self, signals: JudgeSignals) -> float:
        return self.intercept + sum(w * float(getattr(signals, f)) for f, w in zip(self.features, self.weights))

    def probability(self, signals: JudgeSignals) -> float:
        return _sigmoid(self.logit(signals))


# Fitted by ``scripts/tune_retrieval.py judge`` (see the module docstring): both
# bench splits pooled, balanced classes, default retrieval settings.
DEFAULT_MODELS: tuple[LogisticModel, ...] = (
    LogisticModel(
        name="hybrid",
        features=("idf_share", "token_share", "bm25_ratio", "cosine", "cosine_gap"),
        weights=(8.0, 2.0, 2.0, 10.0, 10.0),
        intercept=-17.0,
    ),
    LogisticModel(
        name="keyword",
        features=("idf_share", "token_share", "bm25_ratio"),
        weights=(8.0, 2.0, 2.0),
        intercept=-7.0,
    ),
    LogisticModel(
        name="vector",
        features=("cosine", "cosine_gap"),
        weights=(30.0, 20.0),
        intercept=-27.0,
    ),
)


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


class Judge:
    """Turns signals into a relevance in [0, 1] with the richest applicable model."""

    def __init__(self, models: Sequence[LogisticModel] = DEFAULT_MODELS) -> None:
        # Richest first, so a model is used whenever all its signals are present.
        self.models = sorted(models, key=lambda m: -len(m.features))

    def model_for(self, signals: JudgeSignals) -> LogisticModel | None:
        for model in self.models:
            if model.applies_to(signals):
                return model
        return None

    def probability(self, signals: JudgeSignals) -> float:
        """p(answerable) for these signals; 0.0 when no model applies (nothing was retrieved)."""
        model = self.model_for(signals)
        return 0.0 if model is None else model.probability(signals)

    @staticmethod
    def decide(relevance: float, threshold: float) -> bool:
        """A hit when the relevance reaches the threshold (inclusive)."""
        return relevance >= threshold


# --- signal helpers (used by the pipeline and the harness alike) -------------------------


def idf_share(index: BM25Index, doc_id: int, tokens: Sequence[str]) -> float | None:
    """Share of the query's idf weight found in document ``doc_id`` (None without tokens)."""
    total = index.query_idf_sum(tokens)
    if not tokens or total <= 0:
        return None
    matched = index.matched_tokens(doc_id, tokens)
    return min(1.0, sum(index.idf(t) for t in matched) / total)


def token_share(index: BM25Index, doc_id: int, tokens: Sequence[str]) -> float | None:
    """Share of the query tokens (with repetition) found in document ``doc_id``."""
    if not tokens:
        return None
    return len(index.matched_tokens(doc_id, tokens)) / len(tokens)


def bm25_ratio(index: BM25Index, top_score: float, tokens: Sequence[str]) -> float | None:
    """BM25's top score ÷ Σ idf of the query tokens."""
    total = index.query_idf_sum(tokens)
    if not tokens or total <= 0:
        return None
    return top_score / total


# --- fitting (numpy only) -------------------------------------------------------------------


def fit_logistic(
    X: np.ndarray,
    y: np.ndarray,
    *,
    l2: float = 1e-2,
    balanced: bool = True,
    iterations: int = 100,
) -> tuple[np.ndarray, float]:
    """Weights and intercept of an L2-regularised logistic regression, by Newton's method (IRLS).

    Features are standardised for the fit and the coefficients converted back
    to raw units. With ``balanced`` each class carries half the total weight,
    so p = 0.5 is the even-odds point whatever the class ratio.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, d = X.shape
    mu = X.mean(axis=0)
    sd = X.std(axis=0)
    sd[sd == 0] = 1.0
    Z = np.hstack([np.ones((n, 1)), (X - mu) / sd])
    if balanced:
        pos = max(float(y.sum()), 1.0)
        neg = max(float(n - y.sum()), 1.0)
        sw = np.where(y > 0.5, n / (2 * pos), n / (2 * neg))
    else:
        sw = np.ones(n)
    beta = np.zeros(d + 1)
    reg = np.full(d + 1, l2 * n)
    reg[0] = 0.0  # the intercept is not shrunk
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(Z @ beta, -35, 35)))
        grad = Z.T @ (sw * (p - y)) + reg * beta
        H = (Z * (sw * p * (1 - p))[:, None]).T @ Z + np.diag(reg)
        step = np.linalg.solve(H, grad)
        beta -= step
        if float(np.abs(step).max()) < 1e-10:
            break
    weights = beta[1:] / sd
    intercept = float(beta[0] - (beta[1:] * mu / sd).sum())
    return weights, intercept


def model_from_fit(name: str, features: Sequence[str], weights: np.ndarray, intercept: float) -> LogisticModel:
    return LogisticModel(name=name, features=tuple(features),
                         weights=tuple(round(float(w), 4) for w in weights), intercept=round(float(intercept), 4))


def models_as_python(models: Mapping[str, LogisticModel] | Sequence[LogisticModel]) -> str:
    """Source text for ``DEFAULT_MODELS`` (what the harness prints after fitting)."""
    items = list(models.values()) if isinstance(models, Mapping) else list(models)
    lines = ["DEFAULT_MODELS: tuple[LogisticModel, ...] = ("]
    for m in items:
        lines += [
            "    LogisticModel(",
            f"        name={m.name!r},",
            f"        features={m.features!r},",
            f"        weights={m.weights!r},",
            f"        intercept={m.intercept!r},",
            "    ),",
        ]
    lines.append(")")
    return "\n".join(lines)
