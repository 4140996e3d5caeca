"""Each unit scored by the share of the question's weight it holds, the kind asked for and its source's rank."""
from __future__ import annotations

import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from chat.extractive.asks import holds, question_asks
from chat.extractive.units import Unit
from chat.prompts import Source
from knowledge.retrieval.analysis import get_analyzer
from knowledge.retrieval.evidence import token_weight
from knowledge.retrieval.text import MODEL_RE

RANK_DISCOUNT = 0.15
"""A sentence of the n-th source (0-based) scores × 1 / (1 + 0.15·n): sources are in relevance order."""
TYPE_BONUS = 0.3
"""A sentence's coverage × (1 + 0.3) when it holds the kind of thing the question asks for."""
ROW_BONUS = 0.5
"""A table row whose own cells hold a word of the question and the kind of thing asked for scores × (1 + 0.5) more:
it names what is asked about and gives its value (「| 充电时间 | 6至8小时 |」), where a sentence holding the same words
and a value of that kind may state something else (「不要连续充电超过12小时」)."""
SUBJECT_DISCOUNT = 0.7
"""Among one source's sentences, a word's weight × (1 − 0.7 · the share of sentences holding it); a word of the
source's title or section path counts as held by all of them. Its topic is what the question names and what the
first sentence spells out in full, while the sentence that answers often says 「牠们」 or 「该站」: with the title's
words discounted too, ``chat_eval`` answer_contains on CMRC went 0.837 → 0.887 (questions 301–600), 0.890 → 0.925
(601–1000, not looked at), 0.907 → 0.913 (1–300); a discount of 0.7 instead of 1 for the title's words: 0.863
(301–600); the documentation sets unchanged."""


def _models(text: str) -> set[str]:
    return {"".join(m.group(1, 3)).lower() for m in MODEL_RE.finditer(text)}


def _names_asked(weights: dict[str, float], row: Unit, models: AbstractSet[str] = frozenset()) -> bool:
    """Whether a row is asked about: its cells hold a word of the question that its header does not (「车架」 in
    「| 车架 | 3年 |」 for 「车架保修几年」; 「保修」 in 「进水损坏不保修」 is what the header 「保修期」 says of every row).
    A question naming a model number asks about the rows of that model only (「XK」 is in every row of the sheet)."""
    analyzer = get_analyzer()
    if models and _models(row.text):
        return bool(models & _models(row.text))
    cells, header = analyzer.normalize(row.text), analyzer.normalize(row.header)
    return any((re.search(rf"(?<![0-9.]){t}(?![0-9.a-z])", cells) if t.isdigit() else t in cells) and t not in header
               for t in weights)  # a number as a whole: 「3」 names the row 「| 3 | 10s |」, not 「| 13 | 9min |」


def _scored_text(u: Unit) -> str:
    """What a unit is scored on: a row with its table's header (the header says what its cells are)."""
    return f"{u.header}\n{u.text}" if u.header else u.text


def _weights(query: str) -> dict[str, float]:
    analyzer = get_analyzer()
    weights: dict[str, float] = {}
    for token in analyzer.tokenize(query):
        w = token_weight(token)
        if w > 0:
            weights[token] = max(weights.get(token, 0.0), w)
    return weights


def _coverage(weights: dict[str, float], total: float, text: str) -> float:
    if not total:
        return 0.0
    norm = get_analyzer().normalize(text)
    return sum(w for t, w in weights.items() if t in norm) / total


def _discriminating(weights: dict[str, float], sentences: list[str], topic: str = "") -> dict[str, float]:
    """Weights for choosing among one source's sentences: a word most of them hold (the subject) says little,
    and so does a word of the source's title or section path (its topic, often a pronoun in the answer)."""
    if len(sentences) < 2:
        return weights
    analyzer = get_analyzer()
    norm = [analyzer.normalize(t) for t in sentences]
    topic = analyzer.normalize(topic)
    out = {}
    for t, w in weights.items():
        share = sum(1 for x in norm if t in x) / len(norm)
        if topic and t in topic:
            share = 1.0  # the topic: as if every sentence held it
        out[t] = w * (1.0 - SUBJECT_DISCOUNT * share)
    return out


@dataclass
class Scores:
    """Two scores per unit: ``raw`` chooses the source (and another source's unit), ``own`` the units within it,
    with the words most of that source's units hold (its subject) discounted. Discounted scores are not comparable
    across sources: a chunk about 产假 says 产假 in every sentence."""

    raw: list[tuple[float, int, int]]  # (score, source n, unit pos), units holding a word of the question
    own: dict[tuple[int, int], float]
    asked: set[tuple[int, int]]  # the rows asked about
    matching: set[tuple[int, int]]  # the units holding a word of the question


def score_units(query: str, sources: Sequence[Source], by_source: dict[int, list[Unit]]) -> Scores:
    """Every unit of every source scored for ``query`` (see ``Scores``)."""
    weights = _weights(query)
    total = sum(weights.values())
    asks = question_asks(query)
    models = _models(query)
    scores = Scores(raw=[], own={}, asked=set(), matching=set())
    for rank, source in enumerate(sources):
        texts = [_scored_text(u) for u in by_source[source.n]]
        c = source.candidate
        topic = " ".join(x for x in [c.title, *c.section_path] if x)
        own = _discriminating(weights, texts, topic)
        for u, text in zip(by_source[source.n], texts, strict=True):
            kind = 1.0 + (TYPE_BONUS if asks and holds(asks, text) else 0.0)
            if _coverage(weights, total, u.text) > 0:
                scores.matching.add((source.n, u.pos))
            if u.row and _names_asked(weights, u, models):
                scores.asked.add((source.n, u.pos))
                if asks and holds(asks, u.text):
                    kind *= 1.0 + ROW_BONUS  # the row names what is asked about and gives its value
            discount = 1 + RANK_DISCOUNT * rank
            # Read with its title and section path: a chunk of the document the question names holds its name
            # even when the chunk itself says 「牠们」.
            plain = _coverage(weights, total, f"{topic}\n{text}" if topic else text) * kind
            if plain > 0:
                scores.raw.append((plain / discount - 0.0001 * u.pos, source.n, u.pos))
            scores.own[(source.n, u.pos)] = _coverage(own, total, text) * kind - 0.0001 * u.pos
    scores.raw.sort(key=lambda item: -item[0])
    return scores
