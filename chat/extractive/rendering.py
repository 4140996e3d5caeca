"""The picked units as the answer's text, each source's group cited ``[n]``; table rows as GFM tables."""
from __future__ import annotations

from collections.abc import Sequence

from chat.extractive.units import END, Unit
from chat.gfm import cells, delimiter_for, fix_tables
from chat.prompts import Source


def render_answer(picked: set[tuple[int, int]], n: int, sources: Sequence[Source],
                  by_source: dict[int, list[Unit]]) -> str:
    """The picked units as the answer's text: the chosen source ``n`` first, then in the sources' order, each
    source's units in their order and cited ``[n]``. Quoted rows are a GitHub-flavoured Markdown table: the
    table's header row, the delimiter row, the rows, set off by blank lines (chat/gfm.py)."""
    order = {s.n: i for i, s in enumerate(sources)}
    columns = {s.n: _columns_row(s) for s in sources}
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
                    text += "\n\n…" if previous.row else "…"
                    previous = None
            text += _render(u, previous, columns[source_n])
            previous = u
        parts.append(text.strip("\n") + f"[{source_n}]")
    return fix_tables("\n\n".join(parts))


def _columns_row(source: Source) -> str:
    """A table chunk's header row from its columns (chunking records them), for a row quoted without one."""
    names = (source.candidate.metadata or {}).get("columns") if source.candidate.chunk_type == "table" else None
    if not isinstance(names, list) or not any(str(c).strip() for c in names):
        return ""
    return "| " + " | ".join(str(c).strip().replace("|", "\\|") for c in names) + " |"


def _render(unit: Unit, previous: Unit | None, columns: str) -> str:
    text = unit.text
    if unit.row:
        if previous is not None and previous.row and previous.table == unit.table:
            return "\n" + text
        header = unit.header or (columns if columns and cells(columns) != cells(text) else "")
        if header:
            text = f"{header}\n{delimiter_for(header)}\n{text}"  # the table's header, once, before its first row
        return ("\n\n" if previous is not None else "") + text  # a table is set off by a blank line
    if previous is not None and previous.row:
        return "\n\n" + ("- " + text if unit.item else text)  # the table ends at a blank line
    if unit.code or unit.item:
        text = "- " + text if unit.item else text
        return ("\n" if previous is not None else "") + text
    if previous is not None and (previous.item or previous.code
                                 or previous.line != unit.line and previous.text[-1] not in END):
        return "\n" + text  # a new line in the source that does not follow a sentence's end: never glued
    return text
