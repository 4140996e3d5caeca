"""A source as units: its sentences, list items, table rows (with their header) and code blocks, headings left out."""
from __future__ import annotations

import re
from dataclasses import dataclass

from chat.prompts import Source

CODE_MAX_CHARS = 160
"""A code block up to this long is one unit, quoted whole; a longer one is cut into parts of whole lines this long
at most, each a unit (the part holding the question's words is quoted)."""


_SENTENCE_RE = re.compile(r"[^。！？!?；;\n]+[。！？!?；;]*[”」』）)]?")
_HEADING_MD_RE = re.compile(r"^\s*#{1,6}\s")
_ITEM_RE = re.compile(r"^\s*(?:[-*+•·]\s+|\d{1,2}[.)、．]\s*|[（(]\d{1,2}[)）]\s*|[一二三四五六七八九十]{1,2}[、.．]\s*|"
                      r"第[一二三四五六七八九十\d]{1,3}步[:：，,]?\s*)")
_QUOTE_RE = re.compile(r"^\s*>\s*")
_FAQ_RE = re.compile(r"^\s*(?:问|Q)\s*[:：].*?\n\s*(?:答|A)\s*[:：]\s*", re.DOTALL)
END = "。！？!?；;：:”」』）)…"
_TABLE_ROW_RE = re.compile(r"^\s*\|[^\n]*\|")
_CJK_RE = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_QUOTED_RE = re.compile(r"\"[^\"]*\"|'[^']*'")
_CODE_COMMENT_RE = re.compile(r"^(?:#(?!#?\s*$)|//|/\*|\*/|--\s)")
# A line of code, a command or a setting, read from its shape (a parser drops a Markdown fence, so the chunk's text
# seldom has one): a shell prompt or command, key=value, a call, a statement ending ; { } or a YAML/JSON key.
_CODE_LINE_RE = re.compile(
    r"^\$\s|^(?:sh|bash|java|javac|docker|docker-compose|kubectl|helm|mvn|gradle|git|cd|export|curl|wget|pip3?|npm|"
    r"python3?|nohup|tar|unzip|vim?|cat|ls|mkdir|rm|cp|mv|sudo|systemctl|service|chmod|ulimit|sysctl|echo|source)\s|"
    r"^\./|^bin/|[;{}]$|^[\w.\-\[\]]+\s*=\s*\S|\w=\w|\w\([^()]*\)|^[\w.\-\"']+:\s*(?:\S+|\{|\[)?$|^<\w|^-{1,2}[a-zA-Z]|=>|->|::")


# A line that states a value (a date, a price, a duration, a size) is never taken for a heading, however short and
# unpunctuated: 「2024年10月1日起在全国门店上市」「通常是256KB」 are what a question asks for.
_VALUE_LINE_RE = re.compile(r"\d{4}\s*年|\d{1,2}\s*月\s*\d{1,2}\s*[日号]|\d\s*(?:KB|MB|GB|TB|KiB|MiB|GiB|%|元)|"
                            r"(?<!\d)\d{1,3}(?:\.\d+)?\s*(?:年|个月|周|天|小时|分钟|秒|毫秒)")


@dataclass
class Unit:
    """A sentence (or a list item) of a source, where it stands and what it is."""

    n: int
    pos: int
    text: str
    item: bool = False
    line: int = 0
    row: bool = False
    """A table row (``| a | b |``), shown on a line of its own."""
    header: str = ""
    """A row's table header row (its first row), scored and quoted with it; "" when the table has none."""
    table: int = -1
    """Which table of the source a row is in."""
    code: bool = False
    """A code block, or a part of one within ``CODE_MAX_CHARS``: quoted whole, on lines of its own."""


def source_text(source: Source) -> str:
    """What may be quoted from a source: a FAQ chunk's answer, not its 问/答 pair; a heading chunk: nothing."""
    c = source.candidate
    if c.chunk_type == "heading":
        return ""
    if c.chunk_type == "faq":
        answer = str((c.metadata or {}).get("answer") or "").strip()
        return answer or _FAQ_RE.sub("", source.text, count=1)
    return source.text


def _is_heading_line(line: str, next_line: str | None, headings: set[str]) -> bool:
    """A line that names a section rather than says something: a path element, or short, unpunctuated, followed by text."""
    bare = line.strip().strip("#").strip()
    if not bare:
        return True
    if bare in headings:
        return True
    return (next_line is not None and len(bare) <= 24 and bare[-1] not in END and not _ITEM_RE.match(line)
            and not re.search(r"[，,、]", bare) and not _VALUE_LINE_RE.search(bare))


def _line_kind(line: str) -> str:
    """"code" (a command, a setting, a statement), "comment" (# or // …), or "text"."""
    bare = line.strip()
    if _CODE_COMMENT_RE.match(bare):
        return "comment"
    if _CJK_RE.search(_QUOTED_RE.sub("", bare)):
        return "text"
    return "code" if _CODE_LINE_RE.search(bare) else "text"


def _code_blocks(lines: list[str]) -> dict[int, int]:
    """``{first line: line after the block}`` for each run of code lines (with the comment lines among or before
    them); ``` fences mark a block too."""
    kinds = [_line_kind(ln) for ln in lines]
    fenced = False
    for i, ln in enumerate(lines):
        if ln.strip().startswith("```"):
            kinds[i] = "fence"
            fenced = not fenced
        elif fenced:
            kinds[i] = "code"
    blocks: dict[int, int] = {}
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and kinds[j] in ("code", "comment", "fence"):
            j += 1
        if any(k == "code" for k in kinds[i:j]):
            while j > i and kinds[j - 1] == "comment":  # a trailing comment belongs to the text after it
                j -= 1
            blocks[i] = j
            i = j
        else:
            i = max(j, i + 1)
    return blocks


def units(source: Source) -> list[Unit]:
    """The source's sentences, list items, table rows and code blocks in order, headings left out."""
    c = source.candidate
    headings = {h.strip() for h in [c.title, *c.section_path] if h}
    lines = [ln for ln in source_text(source).splitlines() if ln.strip()]
    blocks = _code_blocks(lines)
    out: list[Unit] = []
    header, table = "", -1
    i = 0
    while i < len(lines):
        raw = lines[i]
        if i in blocks:
            code = [ln.rstrip() for ln in lines[i:blocks[i]] if not ln.strip().startswith("```")]
            for part in _code_parts(code):
                out.append(Unit(n=source.n, pos=len(out), text=part, line=i, code=True))
            i = blocks[i]
            continue
        if raw.lstrip().startswith("|"):  # a table row (a short one is not a heading)
            if len(re.sub(r"\W", "", raw)) < 2:  # the |---| rule
                i += 1
                continue
            previous = lines[i - 1].lstrip() if i else ""
            if not previous.startswith("|"):  # the table's first row: its header, when more rows follow
                table += 1
                header = ""
                if i + 1 < len(lines) and lines[i + 1].lstrip().startswith("|") and _TABLE_ROW_RE.match(raw):
                    header = raw.strip()
                    i += 1
                    continue
            out.append(Unit(n=source.n, pos=len(out), text=raw.strip(), line=i, row=True, header=header, table=table))
            i += 1
            continue
        if _HEADING_MD_RE.match(raw) or _is_heading_line(raw, lines[i + 1] if i + 1 < len(lines) else None, headings):
            i += 1
            continue
        line = _QUOTE_RE.sub("", raw)
        item = bool(_ITEM_RE.match(line))
        line = _ITEM_RE.sub("", line).strip() if item else line.strip()
        for k, m in enumerate(_SENTENCE_RE.finditer(line)):
            text = m.group().strip()
            if len(re.sub(r"\W", "", text)) >= 2:
                out.append(Unit(n=source.n, pos=len(out), text=text, item=item and k == 0, line=i))
        i += 1
    return out


def _code_parts(lines: list[str]) -> list[str]:
    """A code block as one unit, or, past ``CODE_MAX_CHARS``, as consecutive parts of whole lines within it."""
    parts: list[list[str]] = [[]]
    for ln in lines:
        if parts[-1] and len("\n".join(parts[-1] + [ln])) > CODE_MAX_CHARS:
            parts.append([])
        parts[-1].append(ln)
    return ["\n".join(p) for p in parts if p]
