"""PDF with layout (pdfplumber): reading-order text, ruled tables (merged across page breaks), running headers,
footers and page numbers dropped, headings from bookmarks or numbering or font size; scanned pages by OCR.

pypdf opens the file first (encryption, bookmarks, document info); pdfplumber (pdfminer.six) gives each
character's position and size and finds ruled tables; pages without a text layer are rendered with
pypdfium2 and read by OCR (``knowledge.parsers.ocr``). Why pdfplumber rather than PyMuPDF: MIT against
AGPL, and on the generated documents it read every table cell right where PyMuPDF misplaced some
(docs/ingestion.md has the figures).

The text layer is read page by page in ``pdf_text``, scanned pages in ``pdf_scans``.
"""
from __future__ import annotations

import io
import re
import statistics

from pypdf import PasswordType, PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError

from knowledge.parsers import inflate
from knowledge.parsers.blocks import is_cjk
from knowledge.parsers.budget import cut_short, out_of_time, over_count
from knowledge.parsers.headings import candidate, is_article
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
from knowledge.parsers.pdf_scans import recognise_scans
from knowledge.parsers.pdf_text import in_reading_order, merge_continued_tables, read_page
from knowledge.parsers.types import ParsedDocument, ParseError, ParseOptions
from knowledge.titles import meaningful_title, metadata_title

_BLANK_LINE = re.compile(r"\n[ \t\u3000]*\n")
_GENERATED_TITLE = re.compile(r"^(?:microsoft \w+ - |untitled\b)|\.\w{2,4}$", re.IGNORECASE)


def parse(data: bytes, *, stem: str, options: ParseOptions) -> ParsedDocument:
    reader = PdfReader(io.BytesIO(data))
    encrypted = reader.is_encrypted
    if encrypted:
        _open_encrypted(reader)
    outline = _outline(reader)
    pages, metadata, ocr_meta = _read_pages(data, reader, options)
    metadata = {"pages": metadata.pop("pages"), "encrypted": encrypted, **metadata}
    numbers = sorted(pages)
    line_pages, dropped = drop_running_lines([pages[n][0] for n in numbers])
    if dropped:
        metadata["running_lines_dropped"] = dropped
    body = body_size(line_pages)
    title_line = _title_line(line_pages, numbers, body)
    items = merge_continued_tables([in_reading_order(lines, pages[n][1]) for n, lines in zip(numbers, line_pages, strict=True)])
    builder = BlockBuilder(body=body, title=title_line, outline=outline)
    for number, page_items in zip(numbers, items, strict=True):
        builder.page(page_items, meta=ocr_meta.get(number, {}))
    blocks = builder.finish()
    tables = sum(block.kind == "table" for block in blocks)
    if tables:
        metadata["tables"] = tables
    if not any(b.text.strip() for b in blocks):
        raise ParseError("empty_file", "the PDF has no text: no text layer, and no scanned page to recognise")
    info_title = _info_title(reader, metadata)
    # A numbered heading (「一、总则」, 「1. 范围」) is a part of the document, not its name: a PDF without a real title
    # is named by its file name then, unless that is an id (「scan_0001」); an article's label (「第一条」) never names it.
    first_heading = next((b.text for b in blocks if b.kind == "heading"), "")
    if is_article(first_heading) or (candidate(first_heading) is not None and meaningful_title(stem)):
        first_heading = ""
    title = info_title or title_line or first_heading or stem
    return ParsedDocument(title=title, doc_type="pdf", blocks=blocks, metadata=metadata)


def _read_pages(data: bytes, reader: PdfReader, options: ParseOptions) -> tuple[dict, dict, dict[int, dict]]:
    """``(pages read, metadata, OCR metadata by page)``: the text layer within the page budget, then the scanned
    pages by OCR within theirs; the metadata holds the page count and what was blank, recognised or unreadable."""
    # Pages beyond the budget are not read: an ingestion fails at once, a preview reads the first ones.
    readable = None
    try:
        declared = len(reader.pages)
    except Exception:  # noqa: BLE001 - a damaged page tree: pdfminer below may still find the pages
        declared = 0
    if over_count(options, "pages", options.max_pages, declared, "pages in the PDF"):
        readable = options.max_pages
        cut_short(options, "pages", options.max_pages, pages_read=readable)
    with inflate.capped(options.max_inflated_bytes, options.max_zip_ratio):
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
    metadata: dict = {"pages": page_count}
    ocr_meta: dict[int, dict] = {}
    if scans:
        scans, stop = _ocr_budget(scans, options)
        blank, last = recognise_scans(data, scans, pages, ocr_meta, options, last if stop is None else stop - 1)
        pages = {number: read for number, read in pages.items() if number <= last}
        if blank:
            metadata["blank_pages"] = blank
        metadata["ocr_pages"] = sorted(ocr_meta)
        confidences = [meta["ocr_confidence"] for meta in ocr_meta.values()]
        if confidences:
            metadata["ocr_confidence"] = round(statistics.fmean(confidences), 4)
    if unreadable:
        metadata["unreadable_pages"] = unreadable
    return pages, metadata, ocr_meta


def _title_line(line_pages: list[list[Line]], numbers: list[int], body: float) -> str:
    """The title set on the first page (its largest lines, at its top, one after another), taken off the page; ""
    when there is none."""
    if not (numbers and numbers[0] == 1):
        return ""
    first_lines = line_pages[0]
    largest = max((line.size for line in first_lines), default=0.0)
    titles = []
    for line in first_lines[:3]:
        if is_title_line(line, body) and line.size >= 0.97 * largest and candidate(line.text) is None:
            titles.append(line)
        elif titles:
            break
    if not titles:
        return ""
    line_pages[0] = [line for line in first_lines if line not in titles]
    return join_lines([" ".join(line.text.split()) for line in titles])


def _info_title(reader: PdfReader, metadata: dict) -> str:
    """The document information's title unless a tool generated it or it is a placeholder (``(anonymous)``,
    ``knowledge.titles.metadata_title``), and its author into ``metadata``."""
    info_title = ""
    try:
        info = reader.metadata
        info_title = ((info.title if info else None) or "").strip()
        if info and info.author:
            metadata["author"] = str(info.author)
    except Exception:  # noqa: BLE001 - a broken /Info dictionary must not sink an otherwise readable file
        pass
    return "" if _GENERATED_TITLE.search(info_title) else metadata_title(info_title)


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
                read = read_page(page, number)
            except Exception as exc:  # noqa: BLE001 - one damaged page (bad font, broken stream) should not lose the rest
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
    """The budget error (``ResourceLimit``, ``MemoryError``, a stream refused as a bomb by ``inflate``: any
    ``ParseError``, which pdfminer itself never raises) inside ``exc``: pdfplumber wraps pdfminer's errors in
    ``PdfminerException``, which must not turn a file over its budget into a damaged page."""
    for _ in range(8):
        if isinstance(exc, (ParseError, MemoryError)):
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


# --- bookmarks --------------------------------------------------------------------------------


def _outline(reader: PdfReader) -> list[tuple[int, str, int]]:
    """``(level, title, page)`` for each bookmark, in outline order; empty when there is none or it is broken."""
    entries: list[tuple[int, str, int]] = []

    def walk(items: list, level: int) -> None:
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
    except Exception:  # noqa: BLE001 - outlines are optional; a damaged one just means no headings
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
