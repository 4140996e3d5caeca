"""Plain text: decode (UTF-8, UTF-16, GBK/GB18030, detected), then one block per paragraph; numbered
Chinese headings (第一章, 一、, （一）, 1.1) become headings, and a title line on top the title."""
from __future__ import annotations

import re

from knowledge.parsers.decoding import decode_text
from knowledge.parsers.headings import title_line, with_numbered_headings
from knowledge.parsers.types import Block, ParsedDocument, ParseOptions

_BLANK_LINE = re.compile(r"\n[ \t\u3000]*\n")


def parse(data: bytes, *, stem: str, options: ParseOptions) -> ParsedDocument:
    text, encoding = decode_text(data)
    blocks = with_numbered_headings(paragraph_blocks(text))
    metadata: dict = {"encoding": encoding}
    headings = sum(block.kind == "heading" for block in blocks)
    title = title_line(blocks)
    if title:
        blocks = blocks[1:]
    if headings:
        metadata["numbered_headings"] = headings
    return ParsedDocument(title=title or stem, doc_type="text", blocks=blocks, metadata=metadata)


def paragraph_blocks(text: str) -> list[Block]:
    """Split on blank lines; lines inside a paragraph keep their line breaks, trailing spaces go."""
    blocks = []
    for paragraph in _BLANK_LINE.split(text.replace("\ufeff", "")):
        lines = [line.rstrip() for line in paragraph.strip("\n").split("\n")]
        body = "\n".join(lines).strip()
        if body:
            blocks.append(Block(kind="text", text=body))
    return blocks
