"""A Feishu docx document's blocks → Markdown (CommonMark + GFM tables), which the platform's Markdown parser reads.

The blocks are the docx v1 API's flat list, the page block first; a block names its ``children`` by id and its
``block_type`` picks the field holding its content (the types: docs/sources/feishu.md, "What is converted"). Text
is a list of ``elements`` (``text_run``, ``mention_doc``, ``equation``); a table lists its cells row by row in
``table.cells`` with ``table.property.row_size`` / ``column_size``, each cell a block whose children hold its text.
Images, files and embeds are not converted.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote

PAGE, TEXT, BULLET, ORDERED, CODE, QUOTE, TODO, DIVIDER, TABLE, QUOTE_CONTAINER = 1, 2, 12, 13, 14, 15, 17, 22, 31, 34
HEADINGS = {3 + n: n + 1 for n in range(9)}                 # block_type → heading level
FIELDS = {PAGE: "page", TEXT: "text", BULLET: "bullet", ORDERED: "ordered", CODE: "code", QUOTE: "quote", TODO: "todo",
          **{t: f"heading{level}" for t, level in HEADINGS.items()}}
LISTS = frozenset({BULLET, ORDERED, TODO})
_INDENT = "    "    # four spaces nest a list item under "- " and "1. " alike (CommonMark 5.2)
_ESCAPE = str.maketrans({c: "\\" + c for c in "\\`*_[]<>|"})

Block = Mapping[str, Any]


def _styled(text: str, style: Mapping[str, Any]) -> str:
    if not text.strip():
        return text
    if style.get("inline_code"):
        return f"`{text.replace('`', '')}`"
    text = text.translate(_ESCAPE)
    if style.get("bold"):
        text = f"**{text}**"
    if style.get("italic"):
        text = f"*{text}*"
    if style.get("strikethrough"):
        text = f"~~{text}~~"
    link = (style.get("link") or {}).get("url")
    if link:
        text = f"[{text}]({unquote(str(link)).replace(')', '%29').replace(' ', '%20')})"
    return text


def inline(text_field: Mapping[str, Any] | None, *, plain: bool = False) -> str:
    """The text of a block's ``elements``; ``plain`` keeps the characters as they are (code blocks)."""
    out = []
    for element in (text_field or {}).get("elements") or []:
        if run := element.get("text_run"):
            content = str(run.get("content") or "")
            out.append(content if plain else _styled(content, run.get("text_element_style") or {}))
        elif doc := element.get("mention_doc"):
            title = str(doc.get("title") or doc.get("url") or "")
            out.append(title if plain else f"[{title.translate(_ESCAPE)}]({unquote(str(doc.get('url') or ''))})")
        elif equation := element.get("equation"):
            out.append(str(equation.get("content") or "").strip() if plain else f"${str(equation.get('content') or '').strip()}$")
    return "".join(out)


class Renderer:
    """Walks the block tree from the page block; each block becomes one Markdown chunk."""

    def __init__(self, blocks: Sequence[Block]):
        self.by_id = {b.get("block_id"): b for b in blocks if isinstance(b, Mapping)}
        self.page = next((b for b in blocks if b.get("block_type") == PAGE), blocks[0] if blocks else {})

    def title(self) -> str:
        return inline(self.page.get("page"), plain=True).strip()

    def markdown(self) -> str:
        title = self.title()
        body = self._children(self.page, 0)
        return (f"# {title.translate(_ESCAPE)}\n\n" if title else "") + body + ("\n" if body else "")

    def _children(self, block: Block, depth: int) -> str:
        """The children of ``block`` joined: list items one per line, other chunks separated by a blank line."""
        out: list[str] = []
        previous = None
        for child_id in block.get("children") or []:
            child = self.by_id.get(child_id)
            if child is None:
                continue
            chunk = self._block(child, depth)
            if not chunk:
                continue
            kind = child.get("block_type")
            if out:
                out.append("\n" if kind in LISTS and previous in LISTS else "\n\n")
            out.append(chunk)
            previous = kind
        return "".join(out)

    def _block(self, block: Block, depth: int) -> str:
        kind = block.get("block_type")
        text = inline(block.get(FIELDS.get(kind, ""))) if kind in FIELDS else ""
        if kind in HEADINGS:
            return f"{'#' * min(HEADINGS[kind], 6)} {text}" if text.strip() else ""
        if kind in LISTS:
            return self._list_item(block, kind, text, depth)
        if kind == TEXT:
            return text
        if kind == CODE:
            code = inline(block.get("code"), plain=True)
            fence = "````" if "```" in code else "```"
            return f"{fence}\n{code}\n{fence}"
        if kind == QUOTE:
            return _quoted(text)
        if kind == DIVIDER:
            return "---"
        if kind == TABLE:
            return self._table(block)
        if kind == QUOTE_CONTAINER:
            return _quoted(self._children(block, 0))
        return self._children(block, 0)    # callout, grid, grid column and containers: their children; images: nothing

    def _list_item(self, block: Block, kind: int, text: str, depth: int) -> str:
        if kind == TODO:
            done = bool(((block.get("todo") or {}).get("style") or {}).get("done"))
            marker = "- [x] " if done else "- [ ] "
        else:
            marker = "1. " if kind == ORDERED else "- "
        line = f"{_INDENT * depth}{marker}{text}"
        nested = self._children(block, depth + 1)
        return f"{line}\n{nested}" if nested else line

    def _cell_text(self, cell_id: str) -> str:
        cell = self.by_id.get(cell_id) or {}
        text = self._children(cell, 0)
        return " ".join(text.split())    # pipes in the text are escaped by _styled

    def _table(self, block: Block) -> str:
        table = block.get("table") or {}
        prop = table.get("property") or {}
        columns = int(prop.get("column_size") or 0)
        cells = [str(c) for c in table.get("cells") or []]
        if columns <= 0 or not cells:
            return ""
        rows = [cells[i:i + columns] for i in range(0, len(cells), columns)]
        lines = []
        for index, row in enumerate(rows):
            texts = [self._cell_text(c) for c in row] + [""] * (columns - len(row))
            lines.append("| " + " | ".join(texts) + " |")
            if index == 0:
                lines.append("|" + " --- |" * columns)
        return "\n".join(lines)


def _quoted(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.split("\n")) if text else ""


def to_markdown(blocks: Sequence[Block]) -> tuple[str, str]:
    """(the document's title, its Markdown)."""
    renderer = Renderer(blocks)
    return renderer.title(), renderer.markdown()
