"""Stage 7 of the web connector: the run's pages read together, the way a person reads a site.

* **Chrome by comparison**: a page's Markdown (web_extract.py) is cut into blocks (paragraphs, headings, lists,
  tables: what blank lines separate); a block whose text recurs on more than half of the run's pages — a menu, a
  footer, a cookie notice in plain divs — is dropped before chunking. Counted over at least
  :data:`MIN_PAGES` pages; a page fetched alone keeps only the semantic cuts (``<nav>``, ``<footer>``…).
* **Titles without the site's name**: the separator-delimited part most titles share, first or last
  (「产品手册 - 知库官网」, 「安装 - 知库官网」 → 「产品手册」, 「安装」), is trimmed; a title that is only that part stays.
* **One document per text**: pages whose text (normalised, before the chrome is dropped) has the same digest within
  a run are one document, the first one met (``/`` and ``/index.html`` served from two paths, say).

Pages that answered ``304`` count too, with what was stored of them (their block digests, text digest and title),
so one changed page of a large site is read against the whole site. Described in docs/sources/web.md.
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from sources.kinds.base import Item, Known

MIN_PAGES = 3              # fewer pages than this: no block counts (two pages may well share a paragraph)
MAX_BLOCKS = 400           # block digests stored per page
# Title separators: " - ", " | ", " _ ", " · ", " » ", " – ", " — " with spaces; "｜", "|", "_", "——" without.
SEPARATOR = re.compile(r"(\s+[-|_·•»–—]\s+|\s*[｜|_]\s*|\s*——\s*)")
_MARKS = re.compile(r"[#*_>|`~\-\s]+")
_BLOCK_GAP = re.compile(r"\n\s*\n")


def _normal(text: str) -> str:
    return " ".join(_MARKS.sub(" ", text).split()).lower()


def digest(text: str) -> str:
    return hashlib.sha256(_normal(text).encode("utf-8")).hexdigest()[:16]


def blocks(markdown: str) -> list[str]:
    return [block.strip() for block in _BLOCK_GAP.split(markdown) if block.strip()]


def reading(markdown: str, title: str) -> dict[str, Any]:
    """What a page contributes to the comparison, kept in its state for the runs where it answers 304."""
    return {"blocks": [digest(block) for block in blocks(markdown)][:MAX_BLOCKS], "digest": digest(markdown),
            "title": title}


@dataclass
class Pending:
    """A page read in this run, its item made when all pages are known (web.py's walk, then :func:`finish`)."""

    key: str
    known: Known | None
    markdown: str
    title: str
    state: dict[str, Any] = field(default_factory=dict)    # with reading()'s keys
    headers: Mapping[str, str] = field(default_factory=dict)


def _read(state: Mapping[str, Any]) -> tuple[set[str], str, str] | None:
    found = state.get("blocks")
    if not isinstance(found, list) or not isinstance(state.get("digest"), str):
        return None
    return {item for item in found if isinstance(item, str)}, str(state["digest"]), str(state.get("title", ""))


def boilerplate(pages: list[set[str]]) -> set[str]:
    """The block digests found on more than half of ``pages`` (each a page's set of digests)."""
    if len(pages) < MIN_PAGES:
        return set()
    counts = Counter(item for page in pages for item in page)
    return {item for item, count in counts.items() if 2 * count > len(pages)}


def title_affix(titles: Iterable[str]) -> tuple[str, str]:
    """(prefix, suffix): the separator-delimited first or last part most titles share ("" when none)."""
    titles = [title for title in titles if title]
    firsts: Counter[str] = Counter()
    lasts: Counter[str] = Counter()
    for title in titles:
        pieces = SEPARATOR.split(title)
        if len(pieces) >= 3:
            firsts[pieces[0].strip()] += 1
            lasts[pieces[-1].strip()] += 1
    for counter, is_suffix in ((lasts, True), (firsts, False)):
        if counter:
            part, count = counter.most_common(1)[0]
            if part and count >= 2 and 2 * count > len(titles):
                return ("", part) if is_suffix else (part, "")
    return "", ""


def trimmed(title: str, prefix: str, suffix: str) -> str:
    pieces = SEPARATOR.split(title)
    if suffix and len(pieces) >= 3 and pieces[-1].strip() == suffix:
        pieces = pieces[:-2]
    elif prefix and len(pieces) >= 3 and pieces[0].strip() == prefix:
        pieces = pieces[2:]
    return "".join(pieces).strip() or title


def kept_text(markdown: str, common: set[str]) -> str:
    """``markdown`` less its site-wide blocks (all of it when no text but headings would be left)."""
    parts = blocks(markdown)
    kept = [block for block in parts if digest(block) not in common]
    return "\n\n".join(kept if any(not block.startswith("#") for block in kept) else parts)


def finish(pending: list[Pending], stored: list[Mapping[str, Any]],
           item: Callable[[Pending, bytes, str], Item]) -> Iterator[Item]:
    """The items of this run's pages; ``stored``: the states of the pages that answered 304 (unchanged)."""
    readings = [found for found in map(_read, [page.state for page in pending] + stored) if found]
    common = boilerplate([blocks_ for blocks_, _digest, _title in readings])
    prefix, suffix = title_affix(title for _blocks, _digest, title in readings)
    texts = {found[1] for found in map(_read, stored) if found}
    for page in pending:
        if page.state["digest"] in texts:
            continue                               # the same text as a page already kept: one document
        texts.add(page.state["digest"])
        title = trimmed(page.title, prefix, suffix)
        body = kept_text(page.markdown, common)
        if title and title not in body.split("\n", 1)[0]:
            body = f"# {title}\n\n{body}"
        yield item(page, body.encode("utf-8"), title)
