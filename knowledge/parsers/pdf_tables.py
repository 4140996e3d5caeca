"""Tables on a PDF page: ruled ones from their lines (pdfplumber), borderless ones from the text's alignment.

A borderless table is a run of text lines cut at wide gaps (``pdf_text._segments``) whose pieces fall into
the same columns: the x-ranges of the run's pieces (cut at any gap wider than a word space), merged where they
overlap, leave at least two columns with a gutter no piece crosses. pdfplumber's own "text" strategy was
measured and not used: on a page of prose it takes the whole page for a table (docs/ingestion.md); the runs
here start only where lines are cut into cells.
"""
from __future__ import annotations

import statistics

from knowledge.parsers.layout import Line, TableItem, join_lines

_MIN_ROWS = 3  # cut lines in a table: its header and two rows
_MAX_ROW_GAP = 2.0  # a gap over this many character heights between two lines ends the run
_FORM_LABEL = ("：", ":")


def ruled_tables(page, number: int) -> list[TableItem]:
    """The page's tables drawn with lines (pdfplumber's default "lines" strategy)."""
    tables = []
    for found in page.find_tables():
        rows = [[_cell(cell) for cell in row] for row in found.extract()]
        if len(rows) >= 2 and max(len(row) for row in rows) >= 2 and any(any(row) for row in rows):
            x0, top, x1, bottom = found.bbox
            tables.append(TableItem(rows=rows, top=top, bottom=bottom, x0=x0, x1=x1, page=number,
                                    row_pages=[number] * len(rows)))
    return tables


Row = tuple[list[Line], list[Line]]  # a text line's pieces cut at wide gaps, and cut at any gap over a word space


def borderless_tables(rows: list[Row], number: int) -> tuple[list[TableItem], list[Row]]:
    """``(tables, the rows left outside them)`` from the page's text lines (``Row``), top to bottom.

    On a page of two text columns each column is searched alone, so that a column of prose beside a table
    is not taken for one of its columns.
    """
    middle = _column_gutter([piece for wide, _ in rows for piece in wide])
    if middle is None:
        return _tables_in(rows, number)
    tables, rest = [], []
    for side in (lambda p: p.x1 < middle, lambda p: p.x0 > middle):
        half = [([p for p in wide if side(p)], [p for p in fine if side(p)]) for wide, fine in rows]
        found, left = _tables_in([row for row in half if row[0]], number)
        tables.extend(found)
        rest.extend(left)
    rest.extend(([p for p in wide if p.x0 <= middle <= p.x1], []) for wide, _ in rows
                if any(p.x0 <= middle <= p.x1 for p in wide))
    return tables, rest


def _column_gutter(pieces: list[Line]) -> float | None:
    """The page's middle when it is set in two columns of running text (as ``pdf_text.in_reading_order`` reads
    it: at least three wide lines on each side), else ``None``."""
    if not pieces:
        return None
    left_edge, right_edge = min(p.x0 for p in pieces), max(p.x1 for p in pieces)
    middle, wide = (left_edge + right_edge) / 2, 0.3 * (right_edge - left_edge)
    left = sum(p.x1 < middle and p.x1 - p.x0 >= wide for p in pieces)
    right = sum(p.x0 > middle and p.x1 - p.x0 >= wide for p in pieces)
    return middle if left >= 3 and right >= 3 else None


def _tables_in(rows: list[Row], number: int) -> tuple[list[TableItem], list[Row]]:
    tables: list[TableItem] = []
    rest: list[Row] = []
    pieces = [piece for wide, _ in rows for piece in wide]
    width = max((p.x1 for p in pieces), default=0.0) - min((p.x0 for p in pieces), default=0.0)
    index = 0
    while index < len(rows):
        found = _table(rows[index:_run_end(rows, index)], number, width)
        if found is None:
            rest.append(rows[index])
            index += 1
            continue
        tables.append(found[0])
        index += found[1]
    return tables, rest


def _run_end(rows: list[Row], start: int) -> int:
    """The end of the run of cut lines starting at ``start`` (``start`` when that line is not cut).

    Lines of one piece stay inside the run while cut lines follow them closely (a cell's wrapped text).
    """
    if len(rows[start][0]) < 2:
        return start
    end = last_cut = start + 1
    while end < len(rows):
        previous, line = rows[end - 1][0], rows[end][0]
        size = max(statistics.median(piece.size for piece in line), 1.0)
        if line[0].top - max(piece.bottom for piece in previous) > _MAX_ROW_GAP * size:
            break
        end += 1
        if len(line) >= 2:
            last_cut = end
    return last_cut


def _columns(pieces: list[Line]) -> list[list[float]]:
    """The x-ranges of the pieces merged where they overlap: one ``[x0, x1]`` a column, left to right."""
    columns: list[list[float]] = []
    for piece in sorted(pieces, key=lambda p: p.x0):
        if columns and piece.x0 <= columns[-1][1] + 0.5 * piece.size:
            columns[-1][1] = max(columns[-1][1], piece.x1)
        else:
            columns.append([piece.x0, piece.x1])
    return columns


def _fits(columns: list[list[float]], piece: Line) -> bool:
    """A piece inside one column (a cell's wrapped line), not across the gutters."""
    return any(c[0] - piece.size <= piece.x0 and piece.x1 <= c[1] + piece.size for c in columns)


def _table(rows: list[Row], number: int, width: float) -> tuple[TableItem, int] | None:
    """``(table, lines used)`` from the start of the run, or ``None`` when its pieces do not line up in
    columns like a table's cells; ``width`` is the page's text width."""
    if not rows:
        return None
    columns = _columns([piece for wide, fine in rows if len(wide) >= 2 for piece in fine])
    used = 0
    for wide, _ in rows:  # a line of one piece across the gutters (prose after the table) ends it
        if len(wide) < 2 and not _fits(columns, wide[0]):
            break
        used += 1
    while used and len(rows[used - 1][0]) < 2:
        used -= 1
    run = [fine for _, fine in rows[:used]]
    cut = [fine for wide, fine in rows[:used] if len(wide) >= 2]
    if len(columns) < 2 or len(cut) < _MIN_ROWS:
        return None
    pieces = [piece for row in run for piece in row]
    if not _looks_tabular(columns, cut, pieces, width):
        return None
    tops = [row[0].top for row in cut]
    pitch = statistics.median(b - a for a, b in zip(tops, tops[1:], strict=False))
    table_rows: list[list[list[str]]] = []
    last_top = None
    for row in run:  # a line close under the one before (less than 0.7 of a row's pitch) continues its row
        top = min(piece.top for piece in row)
        if last_top is None or top - last_top >= 0.7 * pitch:
            table_rows.append([[] for _ in columns])
        for piece in row:
            table_rows[-1][_column(columns, piece)].append(" ".join(piece.text.split()))
        last_top = top
    cells = [[join_lines(parts) if parts else "" for parts in row] for row in table_rows]
    if sum(bool(cell) for row in cells for cell in row) < 0.5 * len(cells) * len(columns):
        return None
    table = TableItem(rows=cells, top=min(p.top for p in pieces), bottom=max(p.bottom for p in pieces),
                      x0=min(p.x0 for p in pieces), x1=max(p.x1 for p in pieces), page=number,
                      row_pages=[number] * len(cells), columns=[c[0] for c in columns])
    return table, used


def _looks_tabular(columns: list[list[float]], cut: list[list[Line]], pieces: list[Line], page_width: float) -> bool:
    """Cells, not a form of labels and values nor running text beside a table or another column of it."""
    if any(len({_column(columns, piece) for piece in row}) < 2 for row in cut):
        return False  # a cut line whose pieces fall in one column: not cells side by side
    if sum(_aligned(row) for row in cut) < 0.8 * len(cut):
        return False  # lines of text beside lines of text (prose by a table), not the cells of one row
    for index in range(len(columns)):  # a column of full lines of text (over a third of the page) is prose
        column = [p for p in pieces if _column(columns, p) == index]
        if (len(column) >= 3 and statistics.median(p.x1 - p.x0 for p in column) >= 0.35 * page_width
                and statistics.median(len(p.text) for p in column) >= 12):
            return False
    if len(columns) > 2:
        return True
    firsts = [row[0].text.rstrip() for row in cut]
    if sum(text.endswith(_FORM_LABEL) for text in firsts) >= len(firsts) / 2:
        return False  # 「申请人：      张伟」 reads line by line
    width = max(p.x1 for p in pieces) - min(p.x0 for p in pieces)
    return statistics.median(p.x1 - p.x0 for p in pieces) <= 0.3 * width


def _aligned(row: list[Line]) -> bool:
    """The cells of one row share their top, middle or bottom (within a fifth of a character)."""
    tolerance = 0.2 * max(min(p.size for p in row), 1.0)
    return any(max(edge(p) for p in row) - min(edge(p) for p in row) <= tolerance
               for edge in (lambda p: p.top, lambda p: p.bottom, lambda p: (p.top + p.bottom) / 2))


def _column(columns: list[list[float]], piece: Line) -> int:
    middle = (piece.x0 + piece.x1) / 2
    return min(range(len(columns)), key=lambda i: 0 if columns[i][0] <= middle <= columns[i][1]
               else min(abs(middle - columns[i][0]), abs(middle - columns[i][1])))


def _cell(value: str | None) -> str:
    """A cell's text with its wrapped lines rejoined (no space between CJK characters)."""
    parts = [part.strip() for part in (value or "").split("\n") if part.strip()]
    return join_lines(parts) if parts else ""
