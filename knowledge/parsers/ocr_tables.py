"""Borderless tables in OCR'd images: the recognised boxes, unmerged, grouped into visual lines and searched for
columns as a text PDF's lines are (``pdf_tables.borderless_tables``).

The detector (RapidOCR's DBNet) gives one box a run of characters and cuts a line where the gap is wider than
about a character, so a table's cells are boxes of their own and a paragraph's line is one box. Each visual
line becomes a ``pdf_tables.Row`` whose pieces, both "wide" and "fine", are its boxes: the detector's cut stands
for both of a text PDF's cuts. Joining boxes closer than a text PDF's wide gap (2.5 character heights) was
measured and dropped: a table set with two characters between its widest cell and the next column (a box's
padding leaves 1.5–1.9 there) had a row read as one piece, which ended the table there. Prose (one box a line)
never starts a run; forms of labels and values, running text beside a table and a column of full lines are
refused by the same rules as in text PDFs.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from knowledge.parsers.layout import Line, TableItem
from knowledge.parsers.pdf_tables import borderless_tables

_SIZE = 0.8  # a character's height in its box (the detector pads the box), as ``pdf_scans.ocr_line`` takes it


class Box(Protocol):
    """A recognised text box (``ocr.OcrLine``): its text and its box in pixels, top-left origin."""

    @property
    def text(self) -> str: ...
    @property
    def x0(self) -> float: ...
    @property
    def top(self) -> float: ...
    @property
    def x1(self) -> float: ...
    @property
    def bottom(self) -> float: ...
    @property
    def confidence(self) -> float: ...


_B = TypeVar("_B", bound=Box)  # the caller's own box type (``ocr.OcrLine``) comes back


def visual_rows(boxes: Sequence[_B]) -> list[list[_B]]:
    """The boxes grouped into text lines (a box whose middle falls inside the middle half of the line above
    joins it), top to bottom; each line's boxes left to right."""
    rows: list[list[_B]] = []
    for box in sorted(boxes, key=lambda b: (b.top + b.bottom) / 2):
        middle = (box.top + box.bottom) / 2
        if rows:
            last = rows[-1]
            top = min(item.top for item in last)
            bottom = max(item.bottom for item in last)
            height = bottom - top
            if top + 0.25 * height <= middle <= bottom - 0.25 * height:
                last.append(box)
                continue
        rows.append([box])
    for row in rows:
        row.sort(key=lambda item: item.x0)
    return rows


def borderless(boxes: Sequence[_B]) -> tuple[list[TableItem], list[_B]]:
    """``(tables, the boxes outside them)``: tables in pixels, on page 1, with their columns' left edges."""
    owners: dict[int, _B] = {}  # id of a piece -> its box
    rows = []
    for line in visual_rows(boxes):
        pieces = [_line(box) for box in line]
        owners.update((id(piece), box) for piece, box in zip(pieces, line, strict=True))
        rows.append((pieces, pieces))
    tables, rest = borderless_tables(rows, 1)
    if not tables:
        return [], list(boxes)
    kept = {id(owners[id(piece)]) for wide, _ in rest for piece in wide}
    return tables, [box for box in boxes if id(box) in kept]


def _line(box: Box) -> Line:
    return Line(text=box.text, x0=box.x0, top=box.top, x1=box.x1, bottom=box.bottom,
                size=(box.bottom - box.top) * _SIZE, page=1, page_height=0.0, confidence=box.confidence)
