"""Blocks several parsers build alike: Markdown tables from cell rows, FAQ blocks; the CJK character test."""
from __future__ import annotations

import re

from knowledge.parsers.types import Block


def markdown_table(rows: tuple[tuple[str, ...], ...] | list[list[str]] | list[tuple[str, ...]]) -> str:
    """Render rows (the first is the header) as a GitHub-flavoured Markdown table."""
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    lines = []
    for index, row in enumerate(rows):
        cells = [_table_cell(cell) for cell in row] + [""] * (width - len(row))
        lines.append("| " + " | ".join(cells) + " |")
        if index == 0:
            lines.append("|" + "|".join([" --- "] * width) + "|")
    return "\n".join(lines)


def _table_cell(value: str) -> str:
    return re.sub(r"\s*\n\s*", " ", value.strip()).replace("|", "\\|")


def clean_rows(rows: list[list[str]]) -> tuple[tuple[str, ...], ...]:
    """Strip cells, drop rows and trailing columns that are empty everywhere, pad rows to one width."""
    stripped = [[(cell or "").strip() for cell in row] for row in rows]
    stripped = [row for row in stripped if any(row)]
    if not stripped:
        return ()
    width = max((max((i + 1 for i, cell in enumerate(row) if cell), default=0) for row in stripped), default=0)
    return tuple(tuple(row[:width] + [""] * (width - len(row[:width]))) for row in stripped)


def table_block(rows: list[list[str]], *, page: int | None = None, meta: dict | None = None) -> Block | None:
    """A table block from raw cell rows, or ``None`` when no cell has text."""
    cleaned = clean_rows(rows)
    if not cleaned:
        return None
    return Block(kind="table", text=markdown_table(cleaned), page=page, rows=cleaned, meta=dict(meta or {}))


# A table's caption as people number it: 「表1 价格表」「表 2-3：保修期限」「续表1」「Table 4. Prices」.
_TABLE_CAPTION = re.compile(r"^(?:续?表|table)\s*[0-9一二三四五六七八九十]+(?:[-.．][0-9]+)*(?:[\s:：.．、]|$)", re.IGNORECASE)
CAPTION_STYLES = frozenset({"caption", "题注"})
TABLE_CAPTION_MAX_CHARS = 80


def is_table_caption(text: str, *, styled: bool = False) -> bool:
    """Whether a paragraph reads as a table's caption: short, and in the Caption (题注) style or numbered 「表N」."""
    text = " ".join(text.split())
    return 0 < len(text) <= TABLE_CAPTION_MAX_CHARS and (styled or bool(_TABLE_CAPTION.match(text)))


def faq_block(question: str, answer: str, *, meta: dict | None = None) -> Block:
    """A question–answer block rendered as ``问：…\\n答：…``."""
    question, answer = question.strip(), answer.strip()
    return Block(
        kind="faq",
        text=f"问：{question}\n答：{answer}",
        meta={**(meta or {}), "question": question, "answer": answer},
    )


def is_cjk(char: str) -> bool:
    """True for Han ideographs, kana, hangul and CJK/full-width punctuation."""
    code = ord(char)
    return (
        0x2E80 <= code <= 0x9FFF
        or 0xAC00 <= code <= 0xD7AF
        or 0xF900 <= code <= 0xFAFF
        or 0xFE30 <= code <= 0xFE4F
        or 0xFF00 <= code <= 0xFFEF
        or 0x20000 <= code <= 0x3134F
    )
