"""Positioned lines (from a PDF's text layer or from OCR) to blocks: running headers and footers dropped,
paragraphs rebuilt, headings recognised (numbering first, then a larger font), tables kept in place."""
from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass, field

from knowledge.parsers.blocks import clean_rows, is_cjk, markdown_table
from knowledge.parsers.headings import HeadingDetector
from knowledge.parsers.types import Block

SENTENCE_END = tuple("。！？!?.:：；;”」』）)")
_HEADING_TAIL = tuple("。；;，,、！!？?…")
# Page numbers as printed: "3", "- 3 -", "第 3 页", "第3页 共10页", "3/10", "Page 3 of 10".
_PAGE_NUMBER = re.compile(
    r"^[-–—·\s]*(?:第\s*\d+\s*页(?:\s*[/,，]?\s*共\s*\d+\s*页)?|(?:page\s*)?\d+(?:\s*(?:/|of)\s*\d+)?)[-–—·\s]*$",
    re.IGNORECASE,
)
_MARGIN = 0.09  # share of the page height at the top and at the bottom where running headers and footers live


@dataclass
class Line:
    """A line of text on a page, in points (PDF) or pixels (OCR), top-left origin."""

    text: str
    x0: float
    top: float
    x1: float
    bottom: float
    size: float  # character height
    page: int
    page_height: float
    confidence: float | None = None  # OCR only

    @property
    def key(self) -> str:
        """The text with digits masked, so "- 3 -" and "- 4 -" (or "2024年第3期") compare equal."""
        return re.sub(r"\d+", "#", "".join(self.text.split()))


@dataclass
class TableItem:
    """A table found on a page, in the flow of lines by its top."""

    rows: list[list[str]]
    top: float
    bottom: float
    x0: float
    x1: float
    page: int
    row_pages: list[int] = field(default_factory=list)
    columns: list[float] = field(default_factory=list)  # left edges of a borderless table's columns


def in_margin(line: Line) -> bool:
    return line.bottom <= _MARGIN * line.page_height or line.top >= (1 - _MARGIN) * line.page_height


def drop_running_lines(pages: list[list[Line]]) -> tuple[list[list[Line]], int]:
    """Remove page numbers and running headers/footers from the top and bottom margins of every page.

    A margin line is running when its text (digits masked) appears in the margins of at least half
    the pages (and of two); a margin line that is only a page number always goes. Returns the pages
    and how many lines were dropped.
    """
    counted: Counter[str] = Counter()
    for lines in pages:
        counted.update({line.key for line in lines if in_margin(line)})
    threshold = max(2, (len(pages) + 1) // 2)
    kept, dropped = [], 0
    for lines in pages:
        page_kept = []
        for line in lines:
            if in_margin(line) and (_PAGE_NUMBER.match(line.text.strip()) or counted[line.key] >= threshold):
                dropped += 1
                continue
            page_kept.append(line)
        kept.append(page_kept)
    return kept, dropped


def body_size(pages: list[list[Line]]) -> float:
    """The most common character size, weighted by characters: the body text's."""
    sizes: Counter[float] = Counter()
    for lines in pages:
        for line in lines:
            sizes[round(line.size * 2) / 2] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else 10.0


def _width(text: str) -> int:
    return sum(2 if is_cjk(char) else 1 for char in text)


def join_lines(lines: list[str]) -> str:
    """Rejoin wrapped lines: no space between CJK characters, de-hyphenated English."""
    text = lines[0]
    for line in lines[1:]:
        if not text:
            text = line
        elif text.endswith("-") and len(text) > 1 and text[-2].isalpha() and line[:1].islower():
            text = text[:-1] + line
        elif is_cjk(text[-1]) or is_cjk(line[0]):
            text += line
        else:
            text += " " + line
    return text


class BlockBuilder:
    """Turns each page's lines and tables, in reading order, into blocks."""

    def __init__(self, *, body: float, title: str = "", outline: list[tuple[int, str, int]] | None = None) -> None:
        self.body = body
        self.title = title
        # Bookmarks ``(level, title, page)``: when a PDF has them, they alone make the headings.
        self.outline: dict[int, list[tuple[int, str]]] = {}
        for level, heading, page in outline or []:
            self.outline.setdefault(page, []).append((level, heading))
        self._marked: dict[int, tuple[int, str]] = {}
        self.detector = HeadingDetector()
        self.blocks: list[Block] = []
        self._paragraph: list[Line] = []
        self._rest_first: str = ""
        self._paragraph_meta: dict = {}  # the meta of the page the open paragraph started on
        self.meta: dict = {}
        self._previous_text = ""

    def page(self, items: list[Line | TableItem], *, meta: dict | None = None) -> None:
        """Add one page's items (already in reading order); ``meta`` goes on its text blocks."""
        self.meta = dict(meta or {})
        lines = [item for item in items if isinstance(item, Line)]
        left = left_margin(lines)
        right = max((line.x1 for line in lines), default=0.0)
        self._mark_bookmarks(lines)
        for item in items:
            if isinstance(item, TableItem):
                self._flush()
                rows = clean_rows(item.rows)
                if rows:
                    pages = item.row_pages or [item.page]
                    meta = {k: v for k, v in self.meta.items() if k != "ocr_confidence"}
                    if len(set(pages)) > 1:
                        meta["row_pages"] = list(pages)
                    self.blocks.append(Block(kind="table", text=markdown_table(rows), page=item.page,
                                             page_end=max(pages), rows=rows, meta=meta))
                continue
            line = item
            text = " ".join(line.text.split())
            if not text:
                continue
            heading = self._heading(line, text)
            self._previous_text = text
            if heading is not None:
                self._flush()
                level, heading_text, rest = heading
                self.blocks.append(Block(kind="heading", text=heading_text, level=level, page=line.page,
                                         meta={k: v for k, v in self.meta.items() if k != "ocr_confidence"}))
                if rest:
                    self._rest_first = rest
                    self._paragraph = [line]
                    self._paragraph_meta = dict(self.meta)
                continue
            if self._paragraph and (self._paragraph_meta != self.meta or self._breaks(self._paragraph[-1], line, left, right)):
                self._flush()
            if not self._paragraph:
                self._paragraph_meta = dict(self.meta)
            self._paragraph.append(line)

    def finish(self) -> list[Block]:
        """Close the last paragraph; the blocks of every page added."""
        self._flush()
        return self.blocks

    def _mark_bookmarks(self, lines: list[Line]) -> None:
        """Find the line each of the page's bookmarks starts; bookmarks found nowhere head the page."""
        self._marked = {}
        if not self.outline or not lines:
            return
        page = lines[0].page
        position = 0
        for level, heading in self.outline.get(page, []):
            for index in range(position, len(lines)):
                rest = strip_prefix(" ".join(lines[index].text.split()), heading)
                if rest is not None:
                    self._marked[id(lines[index])] = (level, heading)
                    position = index + 1
                    break
            else:
                self._flush()
                self.blocks.append(Block(kind="heading", text=heading, level=level, page=page))

    def _heading(self, line: Line, text: str) -> tuple[int, str, str] | None:
        if self.outline:
            marked = self._marked.get(id(line))
            if marked is None:
                return None
            level, heading = marked
            return level, heading, strip_prefix(text, heading) or ""
        found = self.detector.feed(text, self._previous_text)
        if found is not None:
            level, candidate = found
            return level, candidate.text, candidate.rest
        # Font size makes headings only from a text layer: OCR box heights vary too much from line to line.
        larger = line.confidence is None and line.size >= 1.15 * self.body
        if larger and len(text) <= 40 and not text.endswith(_HEADING_TAIL):
            if self.title and "".join(text.split()) == "".join(self.title.split()):
                return None
            size = round(line.size)
            return self.detector.level_for(f"font{size}", -size), text, ""
        return None

    def _breaks(self, previous: Line, line: Line, left: float, right: float) -> bool:
        """Whether ``line`` starts a new paragraph after ``previous`` (which may end the page before)."""
        indented = left + 1.2 * line.size < line.x0 < left + 4 * line.size  # a first-line indent
        if previous.page != line.page:  # a paragraph runs on over the page break unless it had ended
            return indented or previous.text.rstrip().endswith(SENTENCE_END)
        height = max(previous.bottom - previous.top, 1.0)
        gap = line.top - previous.bottom
        if gap > 0.9 * height or gap < -0.5 * height:  # a blank line, or back up the page (a new column)
            return True
        # A change of font size starts a paragraph; OCR box heights vary by 20% within one paragraph.
        tolerance = 0.15 if line.confidence is None else 0.4
        if abs(line.size - previous.size) > tolerance * max(line.size, previous.size):
            return True
        if indented:
            return True
        short = previous.x1 < right - 2 * previous.size
        return short and previous.text.rstrip().endswith(SENTENCE_END)

    def _flush(self) -> None:
        if not self._paragraph:
            return
        lines, self._paragraph = self._paragraph, []
        texts = [" ".join(line.text.split()) for line in lines]
        if self._rest_first:
            texts[0], self._rest_first = self._rest_first, ""
        text = join_lines(texts).strip()
        if not text:
            return
        meta = dict(self._paragraph_meta)
        confidences = [(line.confidence, len(line.text)) for line in lines if line.confidence is not None]
        if confidences:
            meta["ocr_confidence"] = round(sum(c * n for c, n in confidences) / max(sum(n for _, n in confidences), 1), 4)
        self.blocks.append(Block(kind="text", text=text, page=lines[0].page, page_end=lines[-1].page, meta=meta))


def left_margin(lines: list[Line]) -> float:
    """The text's left edge: the smallest x0 that at least two lines share (within a third of a character)."""
    starts = sorted(line.x0 for line in lines)
    for first, second in zip(starts, starts[1:], strict=False):
        if second - first <= max(2.0, 0.33 * statistics.median(line.size for line in lines)):
            return first
    return starts[0] if starts else 0.0


def is_title_line(line: Line, body: float) -> bool:
    """The document's title: a much larger line near the top of the first page."""
    return line.page == 1 and line.size >= 1.3 * body and line.top < 0.35 * line.page_height and len(line.text) <= 60


def strip_prefix(paragraph: str, title: str) -> str | None:
    """The paragraph after ``title`` (compared ignoring whitespace), or ``None`` if it does not start with it."""
    wanted = "".join(title.split())
    position = 0
    for char in wanted:
        while position < len(paragraph) and paragraph[position].isspace():
            position += 1
        if position >= len(paragraph) or paragraph[position] != char:
            return None
        position += 1
    return paragraph[position:].strip()
