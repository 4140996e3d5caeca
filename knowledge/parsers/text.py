"""Plain text: decode (UTF-8, UTF-16, GBK/GB18030, detected), then one block per paragraph."""
from __future__ import annotations

import re

from knowledge.parsers.base import Block, ParsedDocument, ParseOptions, decode_text

_BLANK_LINE = re.compile(r"\n[ \t\u3000]*\n")


def parse(data: bytes, *, stem: str, options: ParseOptions) -> ParsedDocument:
    text, encoding = decode_text(data)
    return ParsedDocument(title=stem, doc_type="text", blocks=paragraph_blocks(text), metadata={"encoding": encoding})


def paragraph_blocks(text: str) -> list[Block]:
    """Split on blank lines; lines inside a paragraph keep their line breaks, trailing spaces go."""
    blocks = []
    for paragraph in _BLANK_LINE.split(text.replace("\ufeff", "")):
        lines = [line.rstrip() for line in paragraph.strip("\n").split("\n")]
        body = "\n".join(lines).strip()
        if body:
            blocks.append(Block(kind="text", text=body))
    return blocks
