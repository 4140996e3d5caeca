"""Table rows in an answer's text made a GitHub-flavoured Markdown table, as it streams.

A GFM table (https://github.github.com/gfm/#tables-extension-) is a header row, then the delimiter row
(``| --- | --- |``, as many cells as the header), then body rows, and it runs to the first blank line or other
block; a run of ``| … |`` lines without the delimiter row is a paragraph of pipes, and a paragraph line right under
a table is read as one more row. The extractive answer writes its rows as tables (chat/extractive/rendering.py); an
LLM's reply may not, so every answer's stream passes through ``TableFixer`` (chat/answering.py): a table is set off
by blank lines, gets the delimiter row its header lacks (a lone row is a header with no body, still a table), and
citation markers written after a row's closing pipe (``| a | b |[1]``, which GFM would read as a third cell beyond
the header and drop) move into its last cell. Text outside table rows, and everything inside ``` fences, passes
unchanged; rows are held back until their line ends.
"""
from __future__ import annotations

import re
from collections.abc import AsyncGenerator
from contextlib import aclosing

_DELIMITER = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
_TAIL = re.compile(r"\|\s*((?:[\[【]\d{1,3}[\]】]\s*)+)$")
_PIPE = re.compile(r"(?<!\\)\|")


def is_row(line: str) -> bool:
    """A table row: starts with ``|`` (indented less than a code block) and holds another ``|``."""
    bare = line.lstrip(" ")
    return len(line) - len(bare) < 4 and bare.startswith("|") and len(_PIPE.findall(bare)) >= 2


def is_delimiter(line: str) -> bool:
    """The delimiter row under a header (``| --- | :-: |``)."""
    return "-" in line and bool(_DELIMITER.match(line))


def cells(line: str) -> list[str]:
    """A row's cells (an escaped ``\\|`` stays inside its cell)."""
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [c.strip() for c in _PIPE.split(inner)]


def delimiter_for(header: str) -> str:
    """The delimiter row for ``header``: one ``---`` per cell."""
    return "|" + "|".join([" --- "] * len(cells(header))) + "|"


def _tidy(row: str) -> str:
    """A row with the citations after its closing pipe moved into its last cell."""
    row = row.rstrip()
    m = _TAIL.search(row)
    if m is None or row.endswith("|"):
        return row
    marks = "".join(m.group(1).split())
    head = row[:m.start()].rstrip()
    return f"{head}{marks} |"


class TableFixer:
    """``feed`` deltas, get back the text that can be shown now; ``flush`` at the end. Stateful, one per answer."""

    def __init__(self) -> None:
        self.line = ""
        """The current line while it may be (or is) a table row: held back until it ends."""
        self.passing = False
        """The current line is not a row: its characters pass as they come."""
        self.header: str | None = None
        """A table's first row, held until the next line says whether the delimiter row follows."""
        self.in_table = False
        self.fenced = False
        self.last_blank = True
        """The last line given out was blank (or nothing was): a table may start without a blank line first."""
        self.seen = ""
        """The current line's start, enough to tell a ``` fence."""

    def feed(self, delta: str) -> str:
        out: list[str] = []
        for piece in re.split(r"(\n)", delta):
            if piece == "\n":
                out.append(self._end_line())
            elif piece:
                out.append(self._text(piece))
        return "".join(out)

    def flush(self) -> str:
        out = self._end_line(final=True) if (self.line or self.passing) else ""
        if self.header is not None:
            out += self._open(self.header) + "\n" + delimiter_for(self.header)
            self.header = None
        return out

    # --- within a line ---

    def _text(self, piece: str) -> str:
        if len(self.seen) < 8:
            self.seen += piece[:8]
        if self.passing:
            return piece
        self.line += piece
        bare = self.line.lstrip(" ")
        if not bare or (bare.startswith("|") and not self.fenced):
            return ""  # still possibly a row
        return self._pass()

    def _pass(self) -> str:
        """The line is not a row: what was held, and the line so far, go out."""
        out = self._close() if self.line.strip() else ""
        self.passing, text, self.line = True, self.line, ""
        self.last_blank = False
        return out + text

    def _close(self) -> str:
        """Before a non-blank line that is not a row: the held header as a table, a blank line after a table."""
        out = ""
        if self.header is not None:
            out = self._open(self.header) + "\n" + delimiter_for(self.header) + "\n"
            self.header = None
            self.in_table = True
        if self.in_table:
            self.in_table = False
            out += "\n"
        return out

    def _open(self, header: str) -> str:
        return ("" if self.last_blank else "\n") + header

    # --- at a line's end ---

    def _end_line(self, *, final: bool = False) -> str:
        newline = "" if final else "\n"
        if self.seen.lstrip().startswith("```"):
            self.fenced = not self.fenced
        self.seen = ""
        if self.passing:
            self.passing = False
            self.last_blank = False
            return newline
        line, self.line = self.line, ""
        if not line.strip():
            out = ""
            if self.header is not None:
                out = self._open(self.header) + "\n" + delimiter_for(self.header) + "\n"
                self.header = None
            self.in_table = False
            self.last_blank = True
            return out + line + newline
        if not is_row(line):  # "| alone", say: text after all
            self.line = line
            out = self._pass()
            self.passing = False
            return out + newline
        row = _tidy(line)
        if self.header is not None:
            opened = self._open(self.header)
            header, self.header = self.header, None
            self.in_table, self.last_blank = True, False
            if is_delimiter(row):
                given = len(cells(row)) == len(cells(header))  # its alignment kept when it fits the header
                return opened + "\n" + (row.strip() if given else delimiter_for(header)) + newline
            return opened + "\n" + delimiter_for(header) + "\n" + row + newline
        if self.in_table:
            return "" if is_delimiter(row) else row + newline  # a stray delimiter row inside a body is dropped
        if is_delimiter(row):
            return ""  # a delimiter row with no header above it
        self.header = row
        return ""


def fix_tables(text: str) -> str:
    """``text`` with its table rows made GFM tables (``TableFixer`` on the whole text)."""
    fixer = TableFixer()
    return fixer.feed(text) + fixer.flush()


async def gfm_stream(deltas: AsyncGenerator[str, None]) -> AsyncGenerator[str, None]:
    """``deltas`` through a ``TableFixer``; closing this generator closes ``deltas``."""
    fixer = TableFixer()
    async with aclosing(deltas):
        async for delta in deltas:
            if text := fixer.feed(delta):
                yield text
    if text := fixer.flush():
        yield text
