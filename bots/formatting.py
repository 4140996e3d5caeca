"""An answer as a chat platform shows it: the text, the verdict line, the cited documents (title, section, link).

None of the three platforms' message Markdown draws GFM tables (Feishu's lark_md, DingTalk's and WeCom's Markdown
subsets), so a table in the answer becomes one line per row, each cell after its column's name.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _

_ROW = re.compile(r"^\s*\|.*\|\s*$")
_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


@dataclass(frozen=True)
class Citation:
    n: int
    title: str
    section: str = ""
    url: str = ""


@dataclass(frozen=True)
class Reply:
    """What is sent back: the answer, its verdict ("" for an apology) and its citations."""

    text: str
    verdict: str = ""
    citations: list[Citation] = field(default_factory=list)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def tables_as_rows(text: str) -> str:
    """Each GFM table of ``text`` (a header row, a rule row, rows) as lines "header: cell；header: cell"."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        if _ROW.match(lines[i]) and i + 1 < len(lines) and _RULE.match(lines[i + 1]):
            header = _cells(lines[i])
            i += 2
            while i < len(lines) and _ROW.match(lines[i]):
                cells = _cells(lines[i])
                pairs = [f"{h}：{c}" if h else c for h, c in zip(header, cells, strict=False) if c]
                out.append("- " + "；".join(pairs))
                i += 1
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def verdict_line(verdict: str) -> str:
    if verdict == "answered":
        return _("Answered from the knowledge base")
    if verdict == "uncertain":
        return _("May not fully answer the question")
    if verdict == "not_found":
        return _("Not found in the knowledge base")
    return ""


def citations_of(finish: dict[str, Any]) -> list[Citation]:
    """The finish event's citations (chat.services.turn_stream), numbered as the answer cites them."""
    out: list[Citation] = []
    for c in finish.get("citations") or []:
        document = c.get("document") or {}
        title = str(document.get("title") or document.get("source_name") or "").strip() or _("Untitled document")
        section = " › ".join(str(s) for s in c.get("section_path") or [] if s)
        out.append(Citation(int(c.get("n") or len(out) + 1), title, section, str(document.get("source_url") or "")))
    return out


def _link(c: Citation) -> str:
    name = c.title.replace("[", "(").replace("]", ")")
    shown = f"[{name}]({c.url})" if c.url.startswith(("https://", "http://")) else name
    return f"[{c.n}] {shown}" + (f" · {c.section}" if c.section else "")


def sources_markdown(reply: Reply) -> str:
    if not reply.citations:
        return ""
    return f"**{_('Sources')}**\n" + "\n".join(_link(c) for c in reply.citations)


def as_markdown(reply: Reply) -> str:
    """The whole reply as one Markdown text (DingTalk, WeCom): answer, verdict line, sources."""
    parts = [tables_as_rows(reply.text).strip()]
    line = verdict_line(reply.verdict)
    if line:
        parts.append(f"> {line}")
    sources = sources_markdown(reply)
    if sources:
        parts.append(sources)
    return "\n\n".join(p for p in parts if p)


def as_text(reply: Reply) -> str:
    """The reply as plain text (WeCom's text messages): links as their address after the title."""
    lines = [tables_as_rows(reply.text).strip()]
    if line := verdict_line(reply.verdict):
        lines.append(f"（{line}）")
    if reply.citations:
        lines.append(_("Sources") + "：")
        lines += [f"[{c.n}] {c.title}" + (f" · {c.section}" if c.section else "") + (f" {c.url}" if c.url else "")
                  for c in reply.citations]
    return "\n".join(lines)


def cut_bytes(text: str, limit: int) -> str:
    """``text`` within ``limit`` UTF-8 bytes (cut at a character, "…" added when cut)."""
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[: max(0, limit - 3)].decode(errors="ignore") + "…"
