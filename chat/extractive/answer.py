"""The extractive answer: units scored, chosen and rendered (the stages beside this module)."""
from __future__ import annotations

from collections.abc import Sequence

from chat.extractive.asks import is_list_question, question_asks
from chat.extractive.choosing import announced_by, around_best, best_unit, fill, other_source
from chat.extractive.rendering import render_answer
from chat.extractive.scoring import score_units
from chat.extractive.units import units
from chat.prompts import Source


MAX_EXTRACT_CHARS = 160
"""The answer's length at most, in whole sentences (the best sentence and a list are kept whole whatever their
length). Chosen on the first 300 CMRC questions (answers given, replayed offline on retrieval's results): 140 →
0.879 of answers hold the span, 150 → 0.897, 160 → 0.924 with a median answer of 146 characters (the issue's
ceiling is 150). Later changes moved 160 to 0.938 in ``chat_eval`` (docs/chat.md)."""


def extractive_answer(query: str, sources: Sequence[Source], *, max_chars: int = MAX_EXTRACT_CHARS) -> str:
    """The answer built from ``sources`` for ``query``; "" when there are no sources."""
    by_source = {s.n: units(s) for s in sources}
    scores = score_units(query, sources, by_source)
    best = best_unit(scores, sources, by_source)
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
