"""Stage 4 of the web connector: a page's main content as Markdown, its title and its links.

Main content with ``trafilatura`` (Markdown output, tables and formatting kept): navigation, headers, footers,
sidebars and comments are dropped; headings and tables come out as Markdown, which the platform's Markdown parser
reads. Decoding (meta charset, GBK pages) is trafilatura's ``load_html``. A page where it finds no main content is
kept as its HTML (``.html``, for the platform's HTML parser), so nothing is silently lost; ``<meta name="robots">``
``noindex`` / ``nofollow`` is honoured. Why trafilatura: docs/sources/web.md.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from urllib.parse import urljoin

import trafilatura

logging.getLogger("trafilatura").setLevel(logging.ERROR)   # it logs each empty extraction as a warning

MAX_LINKS = 2000          # links read from one page (a hostile page can hold millions)


@dataclass
class Page:
    title: str = ""
    markdown: str = ""                       # "" when trafilatura found no main content
    links: list[str] = field(default_factory=list)   # absolute, as written (canonicalised by web_crawl)
    index: bool = True                       # False: <meta name="robots" content="noindex">
    follow: bool = True                      # False: nofollow
    has_text: bool = False                   # any visible text at all (else there is nothing to keep)


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


def extract(html: bytes, url: str) -> Page:
    """Read one HTML page; never raises on bad HTML (an unreadable page gives an empty Page)."""
    tree = trafilatura.load_html(html)
    if tree is None:
        return Page()
    index, follow = _robots_meta(tree)
    visible = " ".join(tree.xpath("//body//text()[not(ancestor::script) and not(ancestor::style)]")).strip()
    page = Page(title=_title(tree), links=_links(tree, url) if follow else [], index=index, follow=follow,
                has_text=bool(visible))
    if index:
        markdown = trafilatura.extract(tree, url=url, output_format="markdown", include_tables=True,
                                       include_formatting=True, include_links=False, include_images=False,
                                       include_comments=False, with_metadata=False, deduplicate=False)
        page.markdown = (markdown or "").strip()
    return page
