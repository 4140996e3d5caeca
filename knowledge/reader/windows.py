"""A passage cut into what the reader reads: answer units (a sentence, a list item, a table row with its header),
each a short window, and the few of them worth reading for a question.

The reader's cost grows with the tokens it reads, so ``pick`` keeps the units that share most characters with the
question (character bigrams, the measure that needs no segmenter and works for model numbers such as 「XK-800」),
the earlier on a tie.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_UNIT_CHARS = 150
"""A sentence longer than this is cut at its commas into parts this long at most."""
MIN_UNIT_CHARS = 10
"""A sentence shorter than this is read together with the next one (「注意：」, 「是的。」)."""
TITLE_CHARS = 40
"""How much of the passage's title is put before each unit (a row of a spec sheet names no product)."""

_SENTENCE_RE = re.compile(r"[^。！？!?；;\n]+[。！？!?；;]*[”」』）)]?")
_ROW_RE = re.compile(r"^\s*\|.*\|\s*$")
_RULE_RE = re.compile(r"^\s*\|?[\s:|-]+\|?\s*$")
_HEADING_RE = re.compile(r"^\s*#{1,6}\s+")
_CLAUSE_RE = re.compile(r"[^，,]+[，,]?")


@dataclass(frozen=True)
class Unit:
    start: int
    end: int
    text: str
    """What the reader reads: the unit, a table row after its header row."""
    row: bool = False


def _split_long(text: str, start: int) -> list[tuple[int, int, str]]:
    if len(text) <= MAX_UNIT_CHARS:
        return [(start, start + len(text), text)]
    parts: list[tuple[int, int, str]] = []
    cur, cur_start = "", start
    pos = start
    for m in _CLAUSE_RE.finditer(text):
        piece = m.group(0)
        if cur and len(cur) + len(piece) > MAX_UNIT_CHARS:
            parts.append((cur_start, pos, cur))
            cur, cur_start = "", pos
        cur += piece
        pos = start + m.end()
    if cur:
        parts.append((cur_start, pos, cur))
    return [(a, b, t[:MAX_UNIT_CHARS * 2]) for a, b, t in parts]


def units(text: str) -> list[Unit]:
    """The passage's units in order; headings left out, table rows read after their table's header row."""
    out: list[Unit] = []
    header: str | None = None
    offset = 0
    pending: tuple[int, str] | None = None
    for line in text.split("\n"):
        line_start = offset
        offset += len(line) + 1
        if not line.strip():
            header = None
            continue
        if _ROW_RE.match(line):
            if _RULE_RE.match(line):
                continue
            if header is None:
                header = line.strip()
                continue
            out.append(Unit(line_start, line_start + len(line), f"{header}\n{line.strip()}", row=True))
            continue
        header = None
        if _HEADING_RE.match(line):
            continue
        for m in _SENTENCE_RE.finditer(line):
            sentence = m.group(0).strip()
            if not sentence:
                continue
            s_start = line_start + m.start()
            if pending is not None:
                s_start, sentence = pending[0], pending[1] + sentence
                pending = None
            if len(sentence) < MIN_UNIT_CHARS:
                pending = (s_start, sentence)
                continue
            for a, b, t in _split_long(sentence, s_start):
                out.append(Unit(a, b, t))
    if pending is not None:
        out.append(Unit(pending[0], pending[0] + len(pending[1]), pending[1]))
    return out


def _bigrams(text: str) -> set[str]:
    t = re.sub(r"\s+", "", text.lower())
    return {t[i : i + 2] for i in range(len(t) - 1)} | set(t)


def overlap(question: str, unit_text: str) -> float:
    q = _bigrams(question)
    return len(q & _bigrams(unit_text)) / (len(q) or 1)


def pick(question: str, passage_units: list[Unit], k: int) -> list[int]:
    """Indices of the ``k`` units to read, in passage order: those sharing most characters with the question, the
    earlier first on a tie (a question in another language shares none: the passage's opening units, where a
    definition or a table's first rows stand)."""
    ranked = sorted(range(len(passage_units)), key=lambda i: (-overlap(question, passage_units[i].text), i))
    return sorted(ranked[:k])


def reader_text(question: str, title: str, unit_text: str) -> str:
    """The text the reader scores: the question, then the window (the title before the unit)."""
    title = (title or "").strip()[:TITLE_CHARS]
    window = f"{title}：{unit_text}" if title else unit_text
    return f"{question.strip()} passage: {window}"
