"""PDF with layout (pdfplumber): reading-order text, ruled tables (merged across page breaks), running headers,
footers and page numbers dropped, headings from bookmarks or numbering or font size; scanned pages by OCR.

pypdf opens the file first (encryption, bookmarks, document info); pdfplumber (pdfminer.six) gives each
character's position and size and finds ruled tables; pages without a text layer are rendered with
pypdfium2 and read by OCR (``knowledge.parsers.ocr``). Why pdfplumber rather than PyMuPDF: MIT against
AGPL, and on the generated documents it read every table cell right where PyMuPDF misplaced some
(docs/ingestion.md has the figures).
"""
from __future__ import annotations

import io
import re
import statistics
import time

from pypdf import PasswordType, PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError

from knowledge.parsers import inflate
from knowledge.parsers.blocks import is_cjk
from knowledge.parsers.budget import ResourceLimit, cut_short, out_of_time, over_count
from knowledge.parsers.headings import candidate
from knowledge.parsers.types import ParseError, ParseOptions, ParsedDocument
from knowledge.parsers.layout import (
    SENTENCE_END,
    BlockBuilder,
    Line,
    TableItem,
    body_size,
    drop_running_lines,
    is_title_line,
    join_lines,
)

_BLANK_LINE = re.compile(r"\n[ \t\u3000]*\n")
_GENERATED_TITLE = re.compile(r"^(?:microsoft \w+ - |untitled\b)|\.\w{2,4}$", re.IGNORECASE)
_MIN_TEXT_CHARS = 20  # a page with fewer characters than this over a page-sized image is a scan
_SCAN_COVER = 0.5  # ... where the images cover at least this share of the page


def parse(data: bytes, *, stem: str, options: ParseOptions) -> ParsedDocument:
    reader = PdfReader(io.BytesIO(data))
    encrypted = reader.is_encrypted
    if encrypted:
        _open_encrypted(reader)
    outline = _outline(reader)
    # Pages beyond the budget are not read: an ingestion fails at once, a preview reads the first ones.
    readable = None
    try:
        declared = len(reader.pages)
    except Exception:  # a damaged page tree: pdfminer below may still find the pages
        declared = 0
    if over_count(options, "pages", options.max_pages, declared, "pages in the PDF"):
        readable = options.max_pages
        cut_short(options, "pages", options.max_pages, pages_read=readable)
    with inflate.capped(options.max_inflated_bytes):
        try:
            page_count, pages, scans, unreadable, last = _read_text_layer(data, readable, declared, options)
        except Exception as exc:
            if (over := _over_budget(exc)) is not None:
                raise over from None
            raise
    if not page_count:
        raise ParseError("corrupt_file", "the PDF has no pages")
    if unreadable and not pages and not scans:
        raise ParseError("corrupt_file", "no page of the PDF could be read")
    metadata: dict = {"pages": page_count, "encrypted": encrypted}
    ocr_meta: dict[int, dict] = {}
    if scans:
        scans, stop = _ocr_budget(scans, options)
        blank, last = _recognise_scans(data, scans, pages, ocr_meta, options, last if stop is None else stop - 1)
        pages = {number: read for number, read in pages.items() if number <= last}
        if blank:
            metadata["blank_pages"] = blank
        metadata["ocr_pages"] = sorted(ocr_meta)
        confidences = [meta["ocr_confidence"] for meta in ocr_meta.values()]
        if confidences:
            metadata["ocr_confidence"] = round(statistics.fmean(confidences), 4)
    if unreadable:
        metadata["unreadable_pages"] = unreadable

    numbers = sorted(pages)
    line_pages, dropped = drop_running_lines([pages[n][0] for n in numbers])
    if dropped:
        metadata["running_lines_dropped"] = dropped
    body = body_size(line_pages)
    title_line = ""
    first_lines = line_pages[0] if line_pages else []
    if numbers and numbers[0] == 1:
        largest = max((line.size for line in first_lines), default=0.0)
        titles = []
        for line in first_lines[:3]:  # the title: the first page's largest lines, at its top, one after another
            if is_title_line(line, body) and line.size >= 0.97 * largest and candidate(line.text) is None:
                titles.append(line)
            elif titles:
                break
        if titles:
            title_line = join_lines([" ".join(line.text.split()) for line in titles])
            line_pages[0] = [line for line in first_lines if line not in titles]
    items = _merge_continued_tables([_in_reading_order(lines, pages[n][1]) for n, lines in zip(numbers, line_pages)])
    builder = BlockBuilder(body=body, title=title_line, outline=outline)
    for number, page_items in zip(numbers, items):
        builder.page(page_items, meta=ocr_meta.get(number, {}))
    blocks = builder.finish()
    tables = sum(block.kind == "table" for block in blocks)
    if tables:
        metadata["tables"] = tables
    if not any(b.text.strip() for b in blocks):
        raise ParseError("empty_file", "the PDF has no text: no text layer, and no scanned page to recognise")
    info_title = ""
    try:
        info = reader.metadata
        info_title = ((info.title if info else None) or "").strip()
        if info and info.author:
            metadata["author"] = str(info.author)
    except Exception:  # a broken /Info dictionary must not sink an otherwise readable file
        pass
    if _GENERATED_TITLE.search(info_title):
        info_title = ""
    first_heading = next((b.text for b in blocks if b.kind == "heading"), "")
    title = info_title or title_line or first_heading or stem
    return ParsedDocument(title=title, doc_type="pdf", blocks=blocks, metadata=metadata)


def _read_text_layer(data: bytes, readable: int | None, declared: int, options: ParseOptions):
    """``(page count, pages read, scanned pages, unreadable pages, last page read)`` from the text layer."""
    import pdfplumber

    inflate.install()
    pages: dict[int, tuple[list[Line], list[TableItem]]] = {}
    scans: list[int] = []
    unreadable: list[int] = []
    subset = list(range(1, readable + 1)) if readable is not None else None
    with pdfplumber.open(io.BytesIO(data), password="", pages=subset) as pdf:
        page_count = len(pdf.pages) if subset is None else declared
        last = len(pdf.pages)
        for number, page in enumerate(pdf.pages, start=1):
            if options.preview and out_of_time(options):
                cut_short(options, "time", 0, pages_read=number - 1)
                last = number - 1
                break
            try:
                read = _read_page(page, number)
            except Exception as exc:  # one damaged page (bad font, broken stream) should not lose the rest
                if (over := _over_budget(exc)) is not None:
                    raise over from None
                unreadable.append(number)
                continue
            finally:
                page.close()  # drop the page's parsed objects: a long PDF is read in constant memory
            if read is None:
                scans.append(number)
            else:
                pages[number] = read
    return page_count, pages, scans, unreadable, last


def _over_budget(exc: BaseException) -> BaseException | None:
    """The budget error (``ResourceLimit``, ``MemoryError``) inside ``exc``: pdfplumber wraps pdfminer's errors
    in ``PdfminerException``, which must not turn a file over its budget into a damaged page."""
    for _ in range(8):
        if isinstance(exc, (ResourceLimit, MemoryError)):
            return exc
        inner = exc.args[0] if exc.args and isinstance(exc.args[0], BaseException) else exc.__cause__ or exc.__context__
        if inner is None:
            return None
        exc = inner
    return None


def _ocr_budget(scans: list[int], options: ParseOptions) -> tuple[list[int], int | None]:
    """The scanned pages OCR may read, and the page where a preview stops for the budget (None: no stop).

    Within the budget: every one. Over it an ingestion fails before any page is read; a preview reads
    the first ones and stops at the first page over the budget.
    """
    allowed = max(0, options.max_ocr_pages - options.usage.ocr_pages)
    if not over_count(options, "ocr_pages", options.max_ocr_pages, options.usage.ocr_pages + len(scans),
                      "scanned pages to read by OCR"):
        return scans, None
    cut_short(options, "ocr_pages", options.max_ocr_pages, pages_read=scans[allowed] - 1)
    return scans[:allowed], scans[allowed]


def _open_encrypted(reader: PdfReader) -> None:
    """Open PDFs that are encrypted with an empty user password (common for 'no copying' files)."""
    try:
        result = reader.decrypt("")
    except (DependencyError, FileNotDecryptedError, PdfReadError, NotImplementedError) as exc:
        raise ParseError("corrupt_file", f"the PDF is encrypted and cannot be opened ({exc})") from exc
    if result == PasswordType.NOT_DECRYPTED:
        raise ParseError("corrupt_file", "the PDF is encrypted with a password; upload an unencrypted copy")


# --- the text layer ---------------------------------------------------------------------------


def _read_page(page, number: int) -> tuple[list[Line], list[TableItem]] | None:
    """The page's lines outside tables and its ruled tables; ``None`` for a scanned page (OCR it)."""
    chars = [char for char in page.chars if char.get("text", "").strip()]
    area = max(page.width * page.height, 1.0)
    covered = sum(max(0.0, (image["x1"] - image["x0"]) * (image["bottom"] - image["top"])) for image in page.images)
    if len(chars) < _MIN_TEXT_CHARS and covered >= _SCAN_COVER * area:
        return None
    if not chars:
        return [], []
    tables = []
    for found in page.find_tables():
        rows = [[_cell(cell) for cell in row] for row in found.extract()]
        if len(rows) >= 2 and max(len(row) for row in rows) >= 2 and any(any(row) for row in rows):
            x0, top, x1, bottom = found.bbox
            tables.append(TableItem(rows=rows, top=top, bottom=bottom, x0=x0, x1=x1, page=number,
                                    row_pages=[number] * len(rows)))

    def outside(obj: dict) -> bool:
        if obj.get("object_type") != "char":
            return True
        x = (obj["x0"] + obj["x1"]) / 2
        y = (obj["top"] + obj["bottom"]) / 2
        return not any(t.x0 <= x <= t.x1 and t.top <= y <= t.bottom for t in tables)

    text_page = page.filter(outside) if tables else page
    lines = []
    for found in text_page.extract_text_lines(return_chars=True, strip=True):
        if not found["text"].strip():
            continue
        for segment in _segments(found):
            lines.append(Line(text=segment["text"], x0=segment["x0"], top=segment["top"], x1=segment["x1"],
                              bottom=segment["bottom"], size=segment["size"], page=number,
                              page_height=float(page.height)))
    return lines, tables


def _segments(line: dict) -> list[dict]:
    """A text line cut where a wide gap separates its characters: two columns side by side are two lines."""
    chars = sorted((c for c in line["chars"] if c.get("text", "").strip()), key=lambda c: c["x0"])
    sizes = [char["size"] for char in chars] or [0.0]
    size = statistics.median(sizes)
    groups: list[list[dict]] = [[]]
    for char in chars:
        if groups[-1] and char["x0"] - groups[-1][-1]["x1"] > 2.5 * max(size, 1.0):
            groups.append([])
        groups[-1].append(char)
    if len(groups) == 1:
        return [{"text": line["text"], "x0": line["x0"], "x1": line["x1"], "top": line["top"],
                 "bottom": line["bottom"], "size": size}]
    out = []
    for group in groups:
        text = group[0]["text"]
        for before, char in zip(group, group[1:]):
            text += (" " if char["x0"] - before["x1"] > 0.25 * size else "") + char["text"]
        out.append({"text": text, "x0": group[0]["x0"], "x1": max(c["x1"] for c in group),
                    "top": min(c["top"] for c in group), "bottom": max(c["bottom"] for c in group),
                    "size": statistics.median(c["size"] for c in group)})
    return out


def _cell(value: str | None) -> str:
    """A cell's text with its wrapped lines rejoined (no space between CJK characters)."""
    parts = [part.strip() for part in (value or "").split("\n") if part.strip()]
    return join_lines(parts) if parts else ""


def _in_reading_order(lines: list[Line], tables: list[TableItem]) -> list[Line | TableItem]:
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
    ordered: list[Line | TableItem]
    # Columns hold running text: several wide lines on each side. A form's short labels and values
    # («姓名：      张三») are rows, not columns.
    wide = 0.3 * (right_edge - left_edge)
    columns = (sum(line.x1 - line.x0 >= wide for line in left) >= 3 and sum(line.x1 - line.x0 >= wide for line in right) >= 3
               and len(left) + len(right) >= 0.6 * len(lines))
    if columns:
        ordered = []
        band: list[Line] = []

        def close_band() -> None:
            ordered.extend(sorted([l for l in band if l.x1 < middle], key=lambda l: (l.top, l.x0)))
            ordered.extend(sorted([l for l in band if l.x1 >= middle], key=lambda l: (l.top, l.x0)))
            band.clear()

        for line in sorted(lines, key=lambda l: (l.top, l.x0)):
            if line.x0 < middle < line.x1:  # a full-width line (a heading over both columns) ends the band
                close_band()
                ordered.append(line)
            else:
                band.append(line)
        close_band()
    else:
        ordered = _rejoin_rows(sorted(lines, key=lambda l: (l.top, l.x0)))
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


def _merge_continued_tables(pages: list[list[Line | TableItem]]) -> list[list[Line | TableItem]]:
    """A table that ends a page and one that starts the next, with the same columns, are one table.

    The continuation's first row is dropped when it repeats the header (as word processors do).
    """
    previous: TableItem | None = None
    for items in pages:
        if previous is not None and items and isinstance(items[0], TableItem):
            following = items[0]
            width = max(previous.x1 - previous.x0, 1.0)
            same_columns = max(map(len, previous.rows)) == max(map(len, following.rows))
            aligned = abs(previous.x0 - following.x0) < 0.05 * width and abs(previous.x1 - following.x1) < 0.05 * width
            if same_columns and aligned:
                rows = following.rows
                row_pages = following.row_pages
                if [c.strip() for c in rows[0]] == [c.strip() for c in previous.rows[0]]:
                    rows, row_pages = rows[1:], row_pages[1:]
                previous.rows.extend(rows)
                previous.row_pages.extend(row_pages)
                items.pop(0)
        last = items[-1] if items else None
        previous = last if isinstance(last, TableItem) else None
    return pages


# --- scanned pages ----------------------------------------------------------------------------


def _recognise_scans(data: bytes, scans: list[int], pages: dict, ocr_meta: dict[int, dict],
                     options: ParseOptions, last: int) -> tuple[list[int], int]:
    """OCR the scanned pages up to page ``last`` into ``pages`` (lines in points) and ``ocr_meta``.

    Returns the blank pages and the last page read: ``last``, or the page before the one a preview
    had no time left for (a page takes about as long as the one before it). A scanned page that is
    not blank but yields no text fails the document (``ocr_failed``).
    """
    import pypdfium2
    from PIL import ImageStat

    from knowledge.parsers import ocr

    scans = [number for number in scans if number <= last]
    blank: list[int] = []
    document = pypdfium2.PdfDocument(data, password="")
    took = 0.0
    try:
        for done, number in enumerate(scans):
            if options.preview and out_of_time(options, took):
                cut_short(options, "time", 0, pages_read=number - 1)
                return blank, number - 1
            if options.on_page:
                options.on_page(done, len(scans))
            started = time.monotonic()
            page = document[number - 1]
            width, height = page.get_size()
            scale = ocr.RENDER_DPI / 72
            if width * height * scale * scale > ocr.MAX_PIXELS:
                scale = (ocr.MAX_PIXELS / max(width * height, 1.0)) ** 0.5
            image = page.render(scale=scale).to_pil().convert("RGB")
            options.usage.ocr_pages += 1
            recognised, found_tables = ocr.read(image)
            took = time.monotonic() - started
            if not recognised and not found_tables:
                if max(ImageStat.Stat(image.convert("L")).stddev) < 4:
                    blank.append(number)
                    continue
                raise ParseError("ocr_failed", f"page {number} is a scanned image, but no text could be recognised on it")
            to_points = 1 / scale
            lines = [ocr_line(item, number, height, to_points) for item in recognised]
            tables = [TableItem(rows=table.rows, top=table.top * to_points, bottom=table.bottom * to_points,
                                x0=table.x0 * to_points, x1=table.x1 * to_points, page=number,
                                row_pages=[number] * len(table.rows)) for table in found_tables]
            pages[number] = (lines, tables)
            chars = sum(len(item.text) for item in recognised) or 1
            confidence = sum(item.confidence * len(item.text) for item in recognised) / chars if recognised else 1.0
            ocr_meta[number] = {"ocr": True, "ocr_confidence": round(confidence, 4)}
        if options.on_page:
            options.on_page(len(scans), len(scans))
    finally:
        document.close()
    return blank, last


def ocr_line(item, page: int, page_height: float, to_points: float) -> Line:
    """An OCR line in the page's coordinates; its size is the box height less the detector's padding."""
    return Line(text=item.text, x0=item.x0 * to_points, top=item.top * to_points, x1=item.x1 * to_points,
                bottom=item.bottom * to_points, size=(item.bottom - item.top) * to_points * 0.8, page=page,
                page_height=page_height, confidence=item.confidence)


# --- bookmarks --------------------------------------------------------------------------------


def _outline(reader: PdfReader) -> list[tuple[int, str, int]]:
    """``(level, title, page)`` for each bookmark, in outline order; empty when there is none or it is broken."""
    entries: list[tuple[int, str, int]] = []

    def walk(items: list, level: int) -> None:  # type: ignore[type-arg]
        for item in items:
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            title = " ".join(str(getattr(item, "title", "") or "").split())
            index = reader.get_destination_page_number(item)
            if title and index is not None and index >= 0:
                entries.append((min(level, 6), title, index + 1))

    try:
        walk(reader.outline, 1)
    except Exception:  # outlines are optional; a damaged one just means no headings
        return []
    return entries


def split_paragraphs(text: str) -> list[str]:
    """Rebuild paragraphs from plain extracted lines (used for text without positions).

    A blank line always ends a paragraph. Otherwise a line ends one when it is clearly shorter than
    the page's full lines and ends like a sentence, or when it is very short (headings, list items).
    """
    paragraphs: list[str] = []
    for chunk in _BLANK_LINE.split(text.replace("\r\n", "\n").replace("\r", "\n")):
        lines = [line.strip() for line in chunk.split("\n")]
        lines = [line for line in lines if line]
        if not lines:
            continue
        full = max(_width(line) for line in lines)
        current: list[str] = []
        for line in lines:
            current.append(line)
            width = _width(line)
            if full < 24 or width < 0.5 * full or (width < 0.85 * full and line.endswith(SENTENCE_END)):
                paragraphs.append(join_lines(current))
                current = []
        if current:
            paragraphs.append(join_lines(current))
    return [p for p in paragraphs if p]


def _width(line: str) -> int:
    return sum(2 if is_cjk(char) else 1 for char in line)

