"""Which units answer: the chosen source's best unit, what comes with it, the next best, another source's."""
from __future__ import annotations

import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from chat.extractive.asks import holds
from chat.extractive.scoring import Scores
from chat.extractive.units import Unit
from chat.prompts import Source
from knowledge.retrieval.text import ANNOUNCING

LIST_ITEMS = 12


OTHER_SOURCE_SHARE = 0.9
"""Another source's sentence comes in only when it scores ≥ 0.9 × the best (the answer split across sources)."""
FILL_SHARE = 1.0
KEEP_SHARE = 0.15
"""After the best sentence and its neighbour, the next best sentences scoring ≥ 0.15 × the best are added while
the answer stays within its length limit, and shown in the source's order."""


# A sentence opening with a back-reference (「因此他提出……」「这次为……」「两校……」) brings the sentence before it, which
# says what it refers to. chat_eval answer_contains: DRCD 301–600 0.627 → 0.637 (chosen there), DRCD 601–1000 (not
# looked at) 0.7125 → 0.715; CMRC 301–600 and 1001–1266 and the documentation sets unchanged.
_BACK_REFERENCE_RE = re.compile(
    r"^(?:[这這此该該其彼]|[他她它牠祂][们們]?|两[者校国人队]|兩[者校國人隊]|双方|雙方|因此|因而|所以|于是|於是|"
    r"同年|次年|翌年|当年|當年|后来|後來|之后|之後|随后|隨後|然而|但是|不过|不過)")


def best_unit(scores: Scores, sources: Sequence[Source],
          by_source: dict[int, list[Unit]]) -> tuple[int, int, list[tuple[float, int]]] | None:
    """The chosen source, its best unit and its units ranked by their own score; None when no source has units.

    With no unit holding a word of the question, the first source with units, from its start."""
    if scores.raw:
        n = scores.raw[0][1]
        ranked = sorted(((scores.own[(n, u.pos)], u.pos) for u in by_source[n]), reverse=True)
        return n, ranked[0][1], ranked
    first = next((s for s in sources if by_source[s.n]), None)
    return None if first is None else (first.n, 0, [])


def fill(units_: list[Unit], n: int, ranked: list[tuple[float, int]], picked: set[tuple[int, int]], used: int,
          asked: set[tuple[int, int]], max_chars: int) -> int:
    """Add the source's next best units to ``picked`` while the answer is short (a row only when it is asked
    about); the characters used after."""
    best_own = ranked[0][0] if ranked else 0.0
    for score, upos in ranked[1:]:
        if used >= max_chars * FILL_SHARE or score < KEEP_SHARE * best_own:
            break
        extra_unit = units_[upos]
        if (n, upos) in picked or used + len(extra_unit.text) > max_chars or (extra_unit.row and (n, upos) not in asked):
            continue
        picked.add((n, upos))
        used += len(extra_unit.text)
    return used


def other_source(scores: Scores, n: int, by_source: dict[int, list[Unit]]) -> tuple[int, int] | None:
    """Another source's best unit when it scores close to the chosen source's (an answer split across sources)."""
    best_raw = scores.raw[0][0] if scores.raw else 0.0
    return next(((o, opos) for score, o, opos in scores.raw[1:] if o != n and score >= OTHER_SOURCE_SHARE * best_raw
                 and (not by_source[o][opos].row or (o, opos) in scores.asked)), None)


def announced_by(units_: list[Unit], pos: int, *, max_chars: int, asked: AbstractSet[tuple[int, int]] = frozenset(),
               matching: AbstractSet[tuple[int, int]] = frozenset()) -> list[Unit]:
    """The table rows, list items or code a sentence ending 「如下：」 announces (they are the answer), else [].

    Of a table, the rows asked about when there are any (the question names a row), else every row."""
    if not units_[pos].text.endswith(ANNOUNCING):
        return []
    out: list[Unit] = []
    used = 0
    for u in units_[pos + 1: pos + 1 + LIST_ITEMS]:
        if not (u.item or u.row or u.code) or used > max_chars * 2:
            break
        if u.code:  # a code block: the part holding the question's words, when no rows or items came first
            return out or _announced_code(units_, u.pos - 1, matching)
        out.append(u)
        used += len(u.text)
    if any((u.n, u.pos) in asked for u in out if u.row):
        out = [u for u in out if not u.row or (u.n, u.pos) in asked]
    return out


def _announced_code(units_: list[Unit], pos: int, matching: AbstractSet[tuple[int, int]]) -> list[Unit]:
    """The part of a long code block announced at ``pos`` that holds the question's words (its first part when
    none does): the configuration that 「这里贴出……配置文件内容：」 announces is longer than a part."""
    parts: list[Unit] = []
    for u in units_[pos + 1:]:
        if not u.code or (parts and u.line != parts[0].line):
            break
        parts.append(u)
    return [next((u for u in parts if (u.n, u.pos) in matching), parts[0])] if parts else []


def around_best(units_: list[Unit], pos: int, *, asks: str | None, listing: bool, max_chars: int,
            asked: AbstractSet[tuple[int, int]] = frozenset(), matching: AbstractSet[tuple[int, int]] = frozenset()) -> list[Unit]:
    """The best sentence and what should come with it: the list it opens, or the sentence after it.

    A row is quoted alone (with its header, when rendered): the rows next to it are other things."""
    best = units_[pos]
    chosen = [best]
    if best.row:
        return chosen
    used = len(best.text)
    rest = units_[pos + 1:]
    announced = announced_by(units_, pos, max_chars=max_chars, asked=asked, matching=matching)
    if announced:
        return chosen + announced
    if listing:
        items = [u for u in rest[:LIST_ITEMS] if u.item]
        if items and rest and rest[0].item:
            for u in rest[:LIST_ITEMS]:
                if not u.item:
                    break
                chosen.append(u)
                used += len(u.text)
                if used > max_chars * 2:
                    break
            return chosen
    if rest and not (rest[0].row and (rest[0].n, rest[0].pos) not in asked):
        after = rest[0]
        wants_more = (asks is not None and not holds(asks, best.text) and holds(asks, after.text)) or used < 40
        if wants_more or used + len(after.text) <= max_chars * 0.6:
            chosen.append(after)
            used += len(after.text)
    if pos > 0 and _BACK_REFERENCE_RE.match(best.text) and not best.item:
        # 「因此他提出……」「这次为……」: what the sentence refers to is in the one before it.
        chosen.insert(0, units_[pos - 1])
    return chosen
