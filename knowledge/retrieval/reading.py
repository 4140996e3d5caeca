"""The reader stage: the best candidates read against the question, and what that does to the verdict.

``read`` cuts each of the first ``READ_CANDIDATES`` results into answer units (``knowledge.reader.windows``), keeps
the ``UNITS_PER_CANDIDATE`` worth reading, and asks the reader (``protocols.Reader``) for the probability that each
states the answer; each candidate keeps its best (``reader_score``, ``reader_unit``).

``decide`` then turns the judge's verdict into the final one (docs/relevance.md, *The reader*):

* passed the not-found gate: **answered** when the reader finds the answer (best ≥ ``answer_line``) or the judge's
  relevance is at least ``judge_line`` (0.9), otherwise **uncertain**: the passage is about the question but was
  not read as stating it;
* under the gate: **uncertain** when the reader finds the answer with ``rescue_line`` or more (an English question
  over Chinese documents shares no word with them; the judge's evidence is lexical), else not found;
* talk (``chitchat``) stays not found: the reader is not asked whether 「你好」 is answered.
"""

from __future__ import annotations

from collections.abc import Sequence

from knowledge.reader.windows import pick, units

from .judge import ANSWERED, NOT_FOUND, UNCERTAIN
from .protocols import Reader
from .types import Candidate

READ_CANDIDATES = 2
UNITS_PER_CANDIDATE = 2


def windows_of(query: str, cand: Candidate) -> list[tuple[int, int, str]]:
    """The ``(start, end, text)`` units of ``cand`` the reader reads for ``query``."""
    text = cand.content or ""
    if cand.chunk_type == "faq":
        answer = str((cand.metadata or {}).get("answer") or "").strip()
        text = answer or text
    us = units(text)
    return [(us[i].start, us[i].end, us[i].text) for i in pick(query, us, UNITS_PER_CANDIDATE)]


def read(reader: Reader, query: str, candidates: Sequence[Candidate]) -> float | None:
    """Read the first candidates; the best probability over them (None when nothing could be read)."""
    plan: list[tuple[Candidate, int, int, str]] = []
    for cand in list(candidates)[:READ_CANDIDATES]:
        for start, end, text in windows_of(query, cand):
            plan.append((cand, start, end, text))
    if not plan:
        return None
    scores = reader.read(query, [(c.title or "", text) for c, _, _, text in plan])
    best: float | None = None
    if not scores:  # the reader is off (``ZHIKU_READER``): it read nothing
        return None
    for (cand, start, end, text), score in zip(plan, scores, strict=True):
        if cand.reader_score is None or score > cand.reader_score:
            cand.reader_score = score
            cand.reader_unit = {"start": start, "end": end, "text": text, "score": round(score, 4)}
        best = score if best is None else max(best, score)
    return best


def decide(verdict: str, best: float | None, *, talk: bool, answer_line: float, rescue_line: float,
           relevance: float | None = None, judge_line: float = 1.01) -> tuple[str, str]:
    """The final verdict and what decided it (``judge`` or ``reader``).

    Past the gate a question is answered when the reader reads the answer (``answer_line``) or the judge's relevance
    is at least ``judge_line`` (evidence as strong as that is right as often as the reader: docs/relevance.md)."""
    if best is None or talk:
        return verdict, "judge"
    if verdict == NOT_FOUND:
        return (UNCERTAIN, "reader") if best >= rescue_line else (NOT_FOUND, "judge")
    if best >= answer_line:
        return ANSWERED, "reader"
    if relevance is not None and relevance >= judge_line:
        return ANSWERED, "judge"
    return UNCERTAIN, "reader"
