"""HTML via BeautifulSoup (lxml): headings, paragraph-like text and tables, in document order."""
from __future__ import annotations

import re

from bs4 import BeautifulSoup, CData, NavigableString, Tag
from bs4.dammit import EncodingDetector

from knowledge.parsers.blocks import is_cjk, table_block
from knowledge.parsers.decoding import decode_text
from knowledge.parsers.types import Block, ParsedDocument, ParseOptions
from knowledge.titles import metadata_title

_DROP = frozenset(
    {"script", "style", "nav", "noscript", "template", "head", "iframe", "svg", "canvas", "object", "button", "select"}
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCK_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "center", "dd", "details", "dialog",
        "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "header", "hgroup", "hr", "html",
        "li", "main", "menu", "ol", "p", "pre", "section", "summary", "table", "ul",
    }
    | set(_HEADINGS)
)
_SPACE_RUN = re.compile(r"[ \t\r\n\f\u00a0]+")
_BR = "\u2028"  # stands for <br> until whitespace is collapsed; source newlines are only whitespace


def parse(data: bytes, *, stem: str, options: ParseOptions) -> ParsedDocument:
    markup, encoding = _decode(data)
    soup = BeautifulSoup(markup, "lxml")
    title_tag = soup.find("title")
    page_title = metadata_title(_squash(title_tag.get_text())) if title_tag else ""  # not 「Untitled」
    blocks = _Walker().walk(soup.body or soup)
    first_h1 = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), "")
    metadata: dict = {"encoding": encoding}
    return ParsedDocument(title=page_title or first_h1 or stem, doc_type="html", blocks=blocks, metadata=metadata)


def blocks_from_fragment(markup: str) -> list[Block]:
    """Blocks of an HTML fragment or page given as text (e-mail bodies, HTML inside Markdown)."""
    soup = BeautifulSoup(markup, "lxml")
    return _Walker().walk(soup.body or soup)


def _decode(data: bytes) -> tuple[str, str]:
    """Trust a declared charset (BOM or <meta>); otherwise decode like plain text."""
    declared = EncodingDetector.find_declared_encoding(data[:4096], is_html=True)
    if declared:
        encoding = {"gb2312": "gb18030", "gbk": "gb18030"}.get(declared.lower(), declared)
        try:
            return data.decode(encoding), encoding
        except (LookupError, UnicodeDecodeError):
            pass
    return decode_text(data)


def _squash(text: str) -> str:
    """Collapse HTML whitespace; a line break between two CJK characters is dropped, not turned into a space."""

    def replace(match: re.Match[str]) -> str:
        start, end = match.start(), match.end()
        source = match.string
        if (
            "\n" in match.group()
            and start > 0
            and end < len(source)
            and is_cjk(source[start - 1])
            and is_cjk(source[end])
        ):
            return ""
        return " "

    return _SPACE_RUN.sub(replace, text).strip()


class _Walker:
    """Collects inline text into paragraphs, flushing at every block-level element."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []

    def walk(self, element: Tag) -> list[Block]:
        self._walk(element)
        return self.blocks

    def _walk(self, element: Tag) -> None:
        buffer: list[str] = []
        for child in element.children:
            if isinstance(child, NavigableString):
                if type(child) in (NavigableString, CData):
                    buffer.append(str(child))
                continue
            if not isinstance(child, Tag) or child.name in _DROP:
                continue
            name = child.name
            if name == "br":
                buffer.append(_BR)
            elif name not in _BLOCK_TAGS:
                buffer.append(self._inline_text(child))
            else:
                self._flush(buffer)
                buffer = []
                self._block(child)
        self._flush(buffer)

    def _block(self, element: Tag) -> None:
        name = element.name
        if name in _HEADINGS:
            text = _squash(self._inline_text(element).replace(_BR, " "))
            if text:
                self.blocks.append(Block(kind="heading", text=text, level=_HEADINGS[name]))
        elif name == "table":
            self._table(element)
        elif name == "pre":
            text = element.get_text().strip("\n")
            if text.strip():
                self.blocks.append(Block(kind="text", text=text))
        elif name != "hr":
            self._walk(element)

    def _inline_text(self, element: Tag) -> str:
        parts = []
        for node in element.descendants:
            if isinstance(node, Tag):
                if node.name == "br":
                    parts.append(_BR)
            elif type(node) in (NavigableString, CData) and not any(
                parent.name in _DROP for parent in node.parents if parent is not element
            ):
                parts.append(str(node))
        return "".join(parts)

    def _flush(self, buffer: list[str]) -> None:
        lines = [_squash(line) for line in "".join(buffer).split(_BR)]
        text = "\n".join(line for line in lines if line)
        if text:
            self.blocks.append(Block(kind="text", text=text))

    def _table(self, table: Tag) -> None:
        rows: list[list[str]] = []
        for row in table.find_all("tr"):
            if row.find_parent("table") is not table:
                continue  # a nested table's row
            cells: list[str] = []
            for cell in row.find_all(["th", "td"], recursive=False):
                text = _squash(cell.get_text(" "))
                span = _int_attr(cell, "colspan")
                cells.extend([text] * max(1, min(span, 50)))
            rows.append(cells)
        caption = table.find("caption")
        meta = {"caption": _squash(caption.get_text())} if caption and caption.get_text().strip() else {}
        block = table_block(rows, meta=meta)
        if block is not None:
            self.blocks.append(block)


def _int_attr(tag: Tag, name: str) -> int:
    try:
        return int(str(tag.get(name, "1")).strip())
    except ValueError:
        return 1
