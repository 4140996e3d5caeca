"""Markdown (CommonMark + GFM tables) via markdown-it-py tokens: headings, paragraphs, lists, code, tables."""
from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.token import Token

from knowledge.parsers.blocks import table_block
from knowledge.parsers.decoding import decode_text
from knowledge.parsers.types import Block, ParsedDocument, ParseOptions

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_FRONT_MATTER_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.MULTILINE)


def parse(data: bytes, *, stem: str, options: ParseOptions) -> ParsedDocument:
    text, encoding = decode_text(data)
    text = text.lstrip("\ufeff")
    metadata: dict = {"encoding": encoding}
    front_title = ""
    front = _FRONT_MATTER.match(text)
    if front:
        # YAML front matter would otherwise read as a rule plus a setext heading.
        text = text[front.end():]
        found = _FRONT_MATTER_TITLE.search(front.group(1))
        if found:
            front_title = found.group(1).strip("'\"")
    blocks = blocks_from_markdown(text)
    first_h1 = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), "")
    return ParsedDocument(title=first_h1 or front_title or stem, doc_type="markdown", blocks=blocks, metadata=metadata)


def blocks_from_markdown(text: str) -> list[Block]:
    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(text)
    return _Walker().walk(tokens)


class _Walker:
    """Turns the flat token stream into blocks, tracking list nesting and table rows."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.lists: list[str] = []  # "ul" / "ol" for each open list
        self.item_prefix: list[str] = []  # prefix still to print for each open list item ("" once used)
        self.heading_level = 0
        self.table_rows: list[list[str]] | None = None

    def walk(self, tokens: list[Token]) -> list[Block]:
        for token in tokens:
            handler = getattr(self, f"_on_{token.type}", None)
            if handler is not None:
                handler(token)
        return self.blocks

    def _on_heading_open(self, token: Token) -> None:
        self.heading_level = int(token.tag[1])

    def _on_heading_close(self, token: Token) -> None:
        self.heading_level = 0

    def _on_bullet_list_open(self, token: Token) -> None:
        self.lists.append("ul")

    def _on_ordered_list_open(self, token: Token) -> None:
        self.lists.append("ol")

    def _on_bullet_list_close(self, token: Token) -> None:
        self.lists.pop()

    _on_ordered_list_close = _on_bullet_list_close

    def _on_list_item_open(self, token: Token) -> None:
        indent = "  " * (len(self.lists) - 1)
        marker = f"{token.info or 1}." if self.lists and self.lists[-1] == "ol" else "-"
        self.item_prefix.append(f"{indent}{marker} ")

    def _on_list_item_close(self, token: Token) -> None:
        self.item_prefix.pop()

    def _on_table_open(self, token: Token) -> None:
        self.table_rows = []

    def _on_tr_open(self, token: Token) -> None:
        if self.table_rows is not None:
            self.table_rows.append([])

    def _on_table_close(self, token: Token) -> None:
        block = table_block(self.table_rows or [])
        self.table_rows = None
        if block is not None:
            self.blocks.append(block)

    def _on_inline(self, token: Token) -> None:
        text = inline_text(token)
        if self.table_rows is not None:
            if self.table_rows:
                self.table_rows[-1].append(text)
        elif self.heading_level:
            if text.strip():
                self.blocks.append(Block(kind="heading", text=" ".join(text.split()), level=self.heading_level))
        else:
            self._add_text(text)

    def _on_fence(self, token: Token) -> None:
        self._add_text(token.content.rstrip("\n"))

    _on_code_block = _on_fence

    def _on_html_block(self, token: Token) -> None:
        from knowledge.parsers.html import blocks_from_fragment

        self.blocks.extend(blocks_from_fragment(token.content))

    def _add_text(self, text: str) -> None:
        if not text.strip():
            return
        if self.item_prefix:
            prefix = self.item_prefix[-1]
            # Later paragraphs of the same item are indented under its marker.
            self.item_prefix[-1] = " " * len(prefix)
            text = prefix + text.strip()
        self.blocks.append(Block(kind="text", text=text.strip("\n")))


def inline_text(token: Token) -> str:
    """Plain text of an inline token: markup dropped, code and image alt text kept."""
    parts = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n")
        elif child.type == "image":
            parts.append(child.content)
    return "".join(parts)
