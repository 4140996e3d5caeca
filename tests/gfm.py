"""Answers read as a GFM client reads them: markdown-it-py with its GFM table rule (the CommonMark spec plus
https://github.github.com/gfm/#tables-extension-), the tables' cells as text."""
from __future__ import annotations

from markdown_it import MarkdownIt

_MD = MarkdownIt("commonmark").enable("table")


def gfm_tables(text: str) -> list[list[list[str]]]:
    """Each table in ``text`` as its rows of cell texts (the header row first); [] when GFM finds none."""
    tables: list[list[list[str]]] = []
    row: list[str] | None = None
    for token in _MD.parse(text):
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            row = []
        elif token.type == "tr_close" and row is not None:
            tables[-1].append(row)
            row = None
        elif token.type == "inline" and row is not None:
            row.append(token.content)
    return tables


def gfm_html(text: str) -> str:
    """``text`` rendered to HTML as a GFM client renders it."""
    return _MD.render(text)
