"""Sheets that are not question–answer pairs, as tables: merged cells filled, the header row found, title rows
above it kept as the table's caption (``tabular`` decides which sheets are FAQ sheets)."""
from __future__ import annotations

from bisect import bisect_left, bisect_right

from openpyxl.utils.cell import range_boundaries
from openpyxl.xml.functions import iterparse  # defusedxml's when installed, as openpyxl itself reads

from knowledge.parsers.blocks import table_block
from knowledge.parsers.types import Block

_MERGE_TAG = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}mergeCell"
_HEADER_SEARCH = 10  # rows at the top of a sheet where its header row is looked for

Merge = tuple[int, int, int, int]  # min column, min row, max column, max row (1-based, inclusive)


def merged_ranges(workbook, sheet, max_columns: int) -> list[Merge]:
    """The sheet's merged cell ranges, read from its XML (openpyxl's read-only sheets do not keep them).

    Columns beyond ``max_columns`` are cut off; a damaged list of merges is no merge.
    """
    merges: list[Merge] = []
    try:
        with workbook._archive.open(sheet._worksheet_path) as stream:
            for _, element in iterparse(stream):
                if element.tag == _MERGE_TAG and element.get("ref"):
                    low_col, low_row, high_col, high_row = range_boundaries(element.get("ref"))
                    if low_col <= max_columns:
                        merges.append((low_col, low_row, min(high_col, max_columns), high_row))
                element.clear()  # the sheet's cells are not kept: the file is streamed once more
    except Exception:  # noqa: BLE001 - merges are an aid to reading; the cells themselves were read already
        return []
    return merges


def fill_merged(rows: list[tuple[int, list[str]]], merges: list[Merge]) -> tuple[list[tuple[int, list[str]]], set[int]]:
    """Each merged range's value copied into all its cells, on the rows the sheet has; and the rows where a
    range spans columns (a grouped header's upper row)."""
    by_number = {number: cells for number, cells in rows}
    numbers = sorted(by_number)
    spanning: set[int] = set()
    for low_col, low_row, high_col, high_row in merges:
        first = by_number.get(low_row)
        value = first[low_col - 1] if first is not None and low_col - 1 < len(first) else ""
        if not value:
            continue
        if high_col > low_col:
            spanning.add(low_row)
        # Only the rows the sheet has: a range over a million rows costs what its filled rows cost.
        for number in numbers[bisect_left(numbers, low_row):bisect_right(numbers, high_row)]:
            cells = by_number[number]
            if len(cells) < high_col:
                cells.extend([""] * (high_col - len(cells)))
            for column in range(low_col - 1, high_col):
                if not cells[column].strip():
                    cells[column] = value
    return [(number, by_number[number]) for number, _ in rows], spanning


def table_blocks(rows: list[tuple[int, list[str]]], *, meta: dict, spanning: set[int] | None = None) -> list[Block]:
    """The sheet as one table block (header row first) after the caption its title rows give."""
    rows = [(number, [cell.strip() for cell in cells]) for number, cells in rows if any(c.strip() for c in cells)]
    if not rows:
        return []
    width = max(len(cells) for _, cells in rows)
    start = _header_index(rows, width)
    caption = " ".join(dict.fromkeys(c for _, cells in rows[:start] for c in cells if c))
    header_number, header = rows[start]
    body = rows[start + 1:]
    if header_number in (spanning or set()) and body and _is_header_like(body[0][1], width):
        # A grouped header (「住宿标准」 over 「上限」「补助」): the two rows make one, 「住宿标准 上限」.
        lower = body.pop(0)[1]
        header = [_combine(upper, lower[i] if i < len(lower) else "") for i, upper in enumerate(header + [""] * (width - len(header)))]
    table_meta = {**meta, "header_row": header_number}
    if caption:
        table_meta["caption"] = caption
    block = table_block([header] + [cells for _, cells in body], meta=table_meta)
    return [block] if block is not None else []


def _header_index(rows: list[tuple[int, list[str]]], width: int) -> int:
    """The header row: the first of the top rows that fills most of the columns with text (title rows above it
    hold one value, repeated across a merge or alone)."""
    for index, (_, cells) in enumerate(rows[:_HEADER_SEARCH]):
        if len({c for c in cells if c}) >= 2 and _is_header_like(cells, width):
            return index
    return 0


def _is_header_like(cells: list[str], width: int) -> bool:
    filled = [c for c in cells if c]
    return len(filled) >= max(2, (width + 1) // 2) and sum(not _is_number(c) for c in filled) >= 0.8 * len(filled)


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", "").rstrip("%"))
    except ValueError:
        return False
    return True


def _combine(upper: str, lower: str) -> str:
    return upper if not lower or lower == upper else (f"{upper} {lower}" if upper else lower)
