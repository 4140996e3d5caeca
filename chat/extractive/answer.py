"""The extractive answer: units scored, chosen and rendered (the stages beside this module)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from chat.extractive.asks import is_list_question, question_asks
from chat.extractive.choosing import announced_by, around_best, best_unit, fill, other_source
from chat.extractive.rendering import render_answer
from chat.extractive.scoring import Scores, score_units
from chat.extractive.units import Unit, units
from chat.prompts import Source

MAX_EXTRACT_CHARS = 160
"""The answer's length at most, in whole sentences (the best sentence and a list are kept whole whatever their
length). Chosen on the first 300 CMRC questions (answers given, replayed offline on retrieval's results): 140 →
0.879 of answers hold the span, 150 → 0.897, 160 → 0.924 with a median answer of 146 characters (the issue's
ceiling is 150). Later changes moved 160 to 0.938 in ``chat_eval`` (docs/chat.md)."""


READ_QUOTE_LINE = 0.9
"""A sentence the reader scored at least this high (``knowledge.retrieval.reading``) is the one quoted, whatever the
shared words say. Chosen on devdata's manual, policy and FAQ sets: at 0.5 answer_contains fell to 0.600 / 0.767 /
0.867 from the shared words' 0.667 / 0.800 / 0.883; at 0.9 it is theirs (docs/relevance.md, *The reader*)."""
READ_ROW_LINE = 0.5
"""A table row is quoted at a lower line: on the templated spec sheets the training held out, the reader's best row
is the asked-about model's in every question (unit accuracy 1.000, against 0.27–0.87 for prose sentences)."""


def _bigrams(text: str) -> set[str]:
    t = "".join(text.split())
    return {t[i:i + 2] for i in range(len(t) - 1)} or set(t)


def read_unit(scores: Scores, sources: Sequence[Source],
              by_source: dict[int, list[Unit]]) -> tuple[int, int, list[tuple[float, int]]] | None:
    """The source and unit the reader found the answer in (its best window at ``READ_QUOTE_LINE`` or more, a row at
    ``READ_ROW_LINE``), mapped
    onto this module's units by the characters they share; None when the reader did not read or found nothing."""
    read = [(s.candidate.reader_score or 0.0, i, s) for i, s in enumerate(sources)
            if s.candidate.reader_unit and by_source.get(s.n)]
    if not read:
        return None
    score, _, source = max(read, key=lambda r: (r[0], -r[1]))
    unit_text = str(cast(dict[str, Any], source.candidate.reader_unit)["text"])  # ``read`` kept sources with a unit
    is_row = "\n" in unit_text and unit_text.lstrip().startswith("|")
    if score < (READ_ROW_LINE if is_row else READ_QUOTE_LINE):
        return None
    wanted = _bigrams(unit_text.split("\n")[-1])
    n = source.n
    pos = max(range(len(by_source[n])), key=lambda i: (len(wanted & _bigrams(by_source[n][i].text))
                                                       / (len(wanted | _bigrams(by_source[n][i].text)) or 1), -i))
    ranked = sorted(((scores.own.get((n, u.pos), 0.0), u.pos) for u in by_source[n]), reverse=True)
    ranked = [(max(r[0] for r in ranked) + 1.0 if ranked else 1.0, pos)] + [r for r in ranked if r[1] != pos]
    return n, pos, ranked


def extractive_answer(query: str, sources: Sequence[Source], *, max_chars: int = MAX_EXTRACT_CHARS) -> str:
    """The answer built from ``sources`` for ``query``; "" when there are no sources."""
    by_source = {s.n: units(s) for s in sources}
    scores = score_units(query, sources, by_source)
    best = read_unit(scores, sources, by_source)
    if best is not None and by_source[best[0]][best[1]].row:
        # The reader read the answer in this row: the other rows that share the question's words (「XK」 in every
        # model of a spec sheet) are other things, not more of the answer.
        scores = Scores(raw=scores.raw, own=scores.own, asked={(best[0], best[1])}, matching=scores.matching)
    best = best or best_unit(scores, sources, by_source)
    if best is None:
        return ""
    n, pos, ranked = best
    top = next(s for s in sources if s.n == n)
    if top.candidate.chunk_type == "faq" and sum(len(u.text) for u in by_source[n]) <= 2 * max_chars:
        # A FAQ answer is written to be read whole: quoting one of its sentences loses the rest of the answer.
        chosen = list(by_source[n])
    else:
        chosen = around_best(by_source[n], pos, asks=question_asks(query), listing=is_list_question(query),
                             max_chars=max_chars, asked=scores.asked, matching=scores.matching)
    picked = {(n, u.pos) for u in chosen}
    used = fill(by_source[n], n, ranked, picked, sum(len(u.text) for u in chosen), scores.asked, max_chars)
    # A chosen unit that announces a table or list (「标准如下：」) brings it, whatever the length.
    for upos in sorted(p for sn, p in picked if sn == n):
        picked |= {(n, u.pos) for u in announced_by(by_source[n], upos, max_chars=max_chars, asked=scores.asked,
                                                     matching=scores.matching)}
    other = other_source(scores, n, by_source)
    if other is not None and used + len(by_source[other[0]][other[1]].text) <= max_chars:
        picked.add(other)
    return render_answer(picked, n, sources, by_source)
