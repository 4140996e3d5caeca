"""The picked units as the answer's text, each source's group cited ``[n]``."""
from __future__ import annotations

from collections.abc import Sequence

from chat.extractive.units import END, Unit
from chat.prompts import Source


def render_answer(picked: set[tuple[int, int]], n: int, sources: Sequence[Source],
                  by_source: dict[int, list[Unit]]) -> str:
    """The picked units as the answer's text: the chosen source ``n`` first, then in the sources' order, each
    source's units in their order and cited ``[n]``."""
    order = {s.n: i for i, s in enumerate(sources)}
    groups: list[tuple[int, list[Unit]]] = []
    for source_n, upos in sorted(picked, key=lambda p: (p[0] != n, order[p[0]], p[1])):
        u = by_source[source_n][upos]
        if groups and groups[-1][0] == source_n:
            groups[-1][1].append(u)
        else:
            groups.append((source_n, [u]))
    parts = []
    for source_n, group in groups:
        text = ""
        previous: Unit | None = None
        for u in group:
            if previous is not None and previous.pos != u.pos - 1:
                # Text skipped in between: 「…」, on a line of its own before a part of a code block; rows left out
                # of a table and items left out of a list need no mark.
                if u.code:
                    text += "\n…"
                elif not (u.row or u.item):
                    text += "…"
                    previous = None
            text += _render(u, previous)
            previous = u
        parts.append(text.strip("\n") + f"[{source_n}]")
    return "\n\n".join(parts)


def _render(unit: Unit, previous: Unit | None) -> str:
    text = unit.text
    if unit.row:
        if unit.header and not (previous is not None and previous.row and previous.table == unit.table):
            text = f"{unit.header}\n{text}"  # the table's header, once, before its first row quoted
        return ("\n" if previous is not None else "") + text
    if unit.code or unit.item:
        text = "- " + text if unit.item else text
        return ("\n" if previous is not None else "") + text
    if previous is not None and (previous.item or previous.row or previous.code
                                 or previous.line != unit.line and previous.text[-1] not in END):
        return "\n" + text  # a new line in the source that does not follow a sentence's end: never glued
    return text
