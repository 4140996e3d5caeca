"""Stage 4 of the web connector: a page's main content as Markdown, its title, its canonical URL and its links.

Main content with ``trafilatura`` (Markdown output, tables and formatting kept, ``favor_recall``). Headings are
carried through it as marked paragraphs and written back as ``#`` lines (its fallback extractors, used on short
pages, drop heading elements), so ``<h2>``–``<h4>`` become the section paths of the platform's Markdown parser. Before it, the page's
semantic chrome is cut: ``<nav>``, ``role="navigation"``, ``aria-hidden="true"``, cookie banners, and ``<header>`` /
``<footer>`` / ``<aside>`` outside the ``<article>`` / ``<main>``; what chrome is left (a menu in plain divs) is found
by comparing the run's pages (web_pages.py).
Decoding (meta charset, GBK pages) is trafilatura's ``load_html``. A page where it finds no main content is
kept as its HTML (``.html``, for the platform's HTML parser), so nothing is silently lost; ``<meta name="robots">``
``noindex`` / ``nofollow`` is honoured. Why trafilatura: docs/sources/web.md.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from urllib.parse import urljoin

import trafilatura

logging.getLogger("trafilatura").setLevel(logging.ERROR)   # it logs each empty extraction as a warning

MAX_LINKS = 2000          # links read from one page (a hostile page can hold millions)
HEADING = "⟦h{}⟧"          # a heading's mark while trafilatura reads it as a paragraph
_MARKED = re.compile(r"^([*_]*)⟦h([1-6])⟧[^\S\n]*", re.MULTILINE)


@dataclass
class Page:
    title: str = ""
    markdown: str = ""                       # "" when trafilatura found no main content
    links: list[str] = field(default_factory=list)   # absolute, as written (canonicalised by web_crawl)
    index: bool = True                       # False: <meta name="robots" content="noindex">
    follow: bool = True                      # False: nofollow
    has_text: bool = False                   # any visible text at all (else there is nothing to keep)
    canonical: str = ""                      # <link rel="canonical">, absolute, as written


def _robots_meta(tree) -> tuple[bool, bool]:
    values = " ".join(tree.xpath('//meta[translate(@name,"ROBTS","robts")="robots"]/@content')).lower()
    return "noindex" not in values and "none" not in values, "nofollow" not in values and "none" not in values


def _links(tree, url: str) -> list[str]:
    base = tree.xpath("//base/@href")
    base_url = urljoin(url, base[0].strip()) if base else url
    links = []
    for element in tree.xpath("//a[@href] | //area[@href]")[:MAX_LINKS]:
        if "nofollow" in (element.get("rel") or "").lower():
            continue
        href = element.get("href", "").strip()
        if href and not href.lower().startswith(("javascript:", "mailto:", "tel:", "data:")):
            links.append(urljoin(base_url, href))
    return links


def _title(tree) -> str:
    title = " ".join((tree.findtext(".//title") or "").split())
    if not title:
        heading = tree.xpath("//h1")
        title = " ".join(heading[0].text_content().split()) if heading else ""
    return title[:500]


# HTML Living Standard: nav / header / footer / aside sections; WAI-ARIA: the navigation role, aria-hidden.
CHROME = ('//nav | //*[@role="navigation" or @role="banner" or @role="contentinfo" or @aria-hidden="true"]'
          ' | //*[(contains(translate(@id, "COKIE", "cokie"), "cookie")'
          ' or contains(translate(@class, "COKIE", "cokie"), "cookie")) and not(.//article or .//main or .//h1)]'
          ' | //header[not(ancestor::article or ancestor::main)] | //footer[not(ancestor::article or ancestor::main)]'
          ' | //aside[not(ancestor::article or ancestor::main)]')


def _canonical(tree, url: str) -> str:
    for link in tree.xpath('//head/link[@href]'):
        if "canonical" in (link.get("rel") or "").lower().split():
            return urljoin(url, link.get("href", "").strip())
    return ""


def _cut_chrome(tree) -> None:
    for element in tree.xpath(CHROME):
        parent = element.getparent()
        if parent is None or element.tag in ("html", "body"):
            continue
        tail, previous = element.tail, element.getprevious()
        parent.remove(element)
        if tail and tail.strip():            # the text after the element belongs to its parent
            if previous is not None:
                previous.tail = (previous.tail or "") + tail
            else:
                parent.text = (parent.text or "") + tail


def _mark_headings(tree) -> None:
    for heading in tree.xpath("//h1 | //h2 | //h3 | //h4 | //h5 | //h6"):
        level, heading.tag = heading.tag[1], "p"
        heading.text = HEADING.format(level) + (heading.text or "")


def _headings(markdown: str) -> str:
    markdown = _MARKED.sub(lambda found: "#" * int(found.group(2)) + " " + found.group(1), markdown)
    return re.sub(r"⟦h[1-6]⟧", "", markdown)


def extract(html: bytes, url: str) -> Page:
    """Read one HTML page; never raises on bad HTML (an unreadable page gives an empty Page)."""
    tree = trafilatura.load_html(html)
    if tree is None:
        return Page()
    index, follow = _robots_meta(tree)
    visible = " ".join(tree.xpath("//body//text()[not(ancestor::script) and not(ancestor::style)]")).strip()
    page = Page(title=_title(tree), links=_links(tree, url) if follow else [], index=index, follow=follow,
                has_text=bool(visible), canonical=_canonical(tree, url))
    if index:
        _cut_chrome(tree)
        _mark_headings(tree)
        markdown = trafilatura.extract(tree, url=url, output_format="markdown", include_tables=True,
                                       include_formatting=True, include_links=False, include_images=False,
                                       include_comments=False, with_metadata=False, deduplicate=False,
                                       favor_recall=True)
        page.markdown = _headings(markdown or "").strip()
    return page
