"""The PDF text layer, page by page: lines and tables (ruled or borderless, ``pdf_tables``) in reading order;
tables continued across pages merged."""
from __future__ import annotations

import statistics
import unicodedata

from knowledge.parsers.layout import Line, TableItem
from knowledge.parsers.pdf_tables import Row, borderless_tables, ruled_tables

_MIN_TEXT_CHARS = 20  # a page with fewer characters than this over a page-sized image is a scan
_SCAN_COVER = 0.5  # ... where the images cover at least this share of the page


def read_page(page, number: int) -> tuple[list[Line], list[TableItem]] | None:
    """The page's lines outside tables and its tables; ``None`` for a scanned page (OCR it)."""
    chars = [char for char in page.chars if char.get("text", "").strip()]
    area = max(page.width * page.height, 1.0)
    covered = sum(max(0.0, (image["x1"] - image["x0"]) * (image["bottom"] - image["top"])) for image in page.images)
    if len(chars) < _MIN_TEXT_CHARS and covered >= _SCAN_COVER * area:
        return None
    if not chars:
        return [], []
    tables = ruled_tables(page, number)

    def outside(obj: dict) -> bool:
        if obj.get("object_type") != "char":
            return True
        x = (obj["x0"] + obj["x1"]) / 2
        y = (obj["top"] + obj["bottom"]) / 2
        return not any(t.x0 <= x <= t.x1 and t.top <= y <= t.bottom for t in tables)

    text_page = page.filter(outside) if tables else page
    rows: list[Row] = []
    for found in text_page.extract_text_lines(return_chars=True, strip=True):
        if not found["text"].strip():
            continue
        # Pieces cut at wide gaps (columns, cells far apart), and at any gap wider than a word space
        # (cells close together), for the borderless tables.
        wide_cut, word_cut = ([Line(text=segment["text"], x0=segment["x0"], top=segment["top"], x1=segment["x1"],
                                    bottom=segment["bottom"], size=segment["size"], page=number,
                                    page_height=float(page.height)) for segment in _segments(found, gap)]
                              for gap in (2.5, 0.5))
        rows.append((wide_cut, word_cut))
    borderless, rows = borderless_tables(rows, number)
    tables.extend(borderless)
    lines = [line for row, _ in rows for line in row]
    return lines, tables


def _segments(line: dict, gap: float = 2.5) -> list[dict]:
    """A text line cut where a gap over ``gap`` character heights separates its characters: two columns side by
    side are two lines."""
    chars = sorted((c for c in line["chars"] if c.get("text", "").strip()), key=lambda c: c["x0"])
    sizes = [char["size"] for char in chars] or [0.0]
    size = statistics.median(sizes)
    groups: list[list[dict]] = [[]]
    for char in chars:
        if groups[-1] and char["x0"] - groups[-1][-1]["x1"] > gap * max(size, 1.0):
            groups.append([])
        groups[-1].append(char)
    if len(groups) == 1:
        return [{"text": line["text"], "x0": line["x0"], "x1": line["x1"], "top": line["top"],
                 "bottom": line["bottom"], "size": size}]
    out = []
    for group in groups:
        text = group[0]["text"]
        for before, char in zip(group, group[1:], strict=False):
            text += (" " if char["x0"] - before["x1"] > 0.15 * size else "") + char["text"]  # a space is ~0.2 em
        out.append({"text": text, "x0": group[0]["x0"], "x1": max(c["x1"] for c in group),
                    "top": min(c["top"] for c in group), "bottom": max(c["bottom"] for c in group),
                    "size": statistics.median(c["size"] for c in group)})
    return out


def in_reading_order(lines: list[Line], tables: list[TableItem]) -> list[Line | TableItem]:
    """Lines and tables top to bottom; a two-column page is read column by column.

    Between full-width lines, when wide lines fall clearly on either side of the page's middle (a
    gutter no line crosses), the left column is read before the right one.
    """
    if not lines:
        return sorted(tables, key=lambda t: t.top)
    left_edge = min(line.x0 for line in lines)
    right_edge = max(line.x1 for line in lines)
    middle = (left_edge + right_edge) / 2
    left = [line for line in lines if line.x1 < middle]
    right = [line for line in lines if line.x0 > middle]
    ordered: list[Line]
    # Columns hold running text: several wide lines on each side. A form's short labels and values
    # («姓名：      张三») are rows, not columns.
    wide = 0.3 * (right_edge - left_edge)
    columns = (sum(line.x1 - line.x0 >= wide for line in left) >= 3 and sum(line.x1 - line.x0 >= wide for line in right) >= 3
               and len(left) + len(right) >= 0.6 * len(lines))
    if columns:
        ordered = []
        band: list[Line] = []

        def close_band() -> None:
            ordered.extend(sorted([ln for ln in band if ln.x1 < middle], key=lambda ln: (ln.top, ln.x0)))
            ordered.extend(sorted([ln for ln in band if ln.x1 >= middle], key=lambda ln: (ln.top, ln.x0)))
            band.clear()

        for line in sorted(lines, key=lambda ln: (ln.top, ln.x0)):
            if line.x0 < middle < line.x1:  # a full-width line (a heading over both columns) ends the band
                close_band()
                ordered.append(line)
            else:
                band.append(line)
        close_band()
    else:
        ordered = _rejoin_rows(sorted(lines, key=lambda ln: (ln.top, ln.x0)))
    out: list[Line | TableItem] = []
    pending = sorted(tables, key=lambda t: t.top)
    for line in ordered:
        while pending and pending[0].top <= line.top:
            out.append(pending.pop(0))
        out.append(line)
    out.extend(pending)
    return out


def _rejoin_rows(lines: list[Line]) -> list[Line]:
    """Pieces of one row (cut at wide gaps, e.g. a borderless table's cells) back into one line, when the
    page has no columns: 「姓名      张三」 reads as one line."""
    out: list[Line] = []
    for line in lines:
        last = out[-1] if out else None
        if last is not None and abs(line.top - last.top) < 0.3 * max(line.size, 1.0) and line.x0 > last.x1:
            out[-1] = Line(text=f"{last.text} {line.text}", x0=last.x0, top=min(last.top, line.top), x1=line.x1,
                           bottom=max(last.bottom, line.bottom), size=last.size, page=last.page,
                           page_height=last.page_height, confidence=last.confidence)
        else:
            out.append(line)
    return out


def merge_continued_tables(pages: list[list[Line | TableItem]]) -> list[list[Line | TableItem]]:
    """A table that ends a page and one that starts the next, with the same columns, are one table.

    The continuation's first row is dropped when it repeats the header (as word processors do), compared without
    whitespace and in NFKC form: OCR reads one page's 「（GB）」 as another's 「 (GB)」.
    """
    previous: TableItem | None = None
    for items in pages:
        if previous is not None and items and isinstance(items[0], TableItem):
            following = items[0]
            width = max(previous.x1 - previous.x0, 1.0)
            same_columns = max(map(len, previous.rows)) == max(map(len, following.rows))
            aligned = abs(previous.x0 - following.x0) < 0.05 * width and abs(previous.x1 - following.x1) < 0.05 * width
            if previous.columns and len(previous.columns) == len(following.columns):  # borderless: text edges
                aligned = all(abs(a - b) < 0.05 * width for a, b in zip(previous.columns, following.columns, strict=True))
            if same_columns and aligned:
                rows = following.rows
                row_pages = following.row_pages
                if list(map(_cell_key, rows[0])) == list(map(_cell_key, previous.rows[0])):
                    rows, row_pages = rows[1:], row_pages[1:]
                previous.rows.extend(rows)
                previous.row_pages.extend(row_pages)
                items.pop(0)
        last = items[-1] if items else None
        previous = last if isinstance(last, TableItem) else None
    return pages


def _cell_key(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).split())
