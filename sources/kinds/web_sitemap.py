"""Stage 3 of the web connector: sitemaps (https://www.sitemaps.org/protocol.html), the page list a site publishes.

A sitemap is a ``<urlset>`` of ``<url><loc>…</loc><lastmod>…</lastmod></url>`` or a ``<sitemapindex>`` of
``<sitemap><loc>`` naming further sitemaps (read one level deep, as the protocol allows no nesting), plain
or gzip-compressed. Parsed with ``lxml`` with entities, DTDs and network access off (no XXE, no billion
laughs); gzip is inflated only up to the byte cap. A ``<lastmod>`` is kept: a page whose lastmod equals the
one stored with it is left alone without a request (web_crawl.py).
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

from lxml import etree

from sources.kinds.web_fetch import Fetcher, FetchError

MAX_SITEMAP_BYTES = 10 * 1024 * 1024
MAX_CHILD_SITEMAPS = 50
NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


@dataclass(frozen=True)
class Entry:
    loc: str
    lastmod: str = ""


def _inflate(data: bytes, limit: int) -> bytes:
    if not data.startswith(b"\x1f\x8b"):
        return data
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = inflater.decompress(data, limit + 1)
    return out[:limit] if len(out) > limit else out


def _root(data: bytes):
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, recover=True)
    try:
        return etree.fromstring(data, parser)
    except etree.XMLSyntaxError:
        return None


def _local(tag) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def parse(data: bytes) -> tuple[str, list[Entry]]:
    """("urlset" | "sitemapindex" | "", entries) of one sitemap document."""
    root = _root(_inflate(data, MAX_SITEMAP_BYTES))
    if root is None or _local(root.tag) not in ("urlset", "sitemapindex"):
        return "", []
    child = "url" if _local(root.tag) == "urlset" else "sitemap"
    entries = []
    for element in root:
        if _local(element.tag) != child:
            continue
        fields = {_local(part.tag): (part.text or "").strip() for part in element}
        if fields.get("loc"):
            entries.append(Entry(fields["loc"], fields.get("lastmod", "")))
    return _local(root.tag), entries


def read_sitemaps(fetcher: Fetcher, urls: list[str], allowed, *, limit: int) -> tuple[list[Entry], bool]:
    """The pages the sitemaps at ``urls`` list (an index followed one level), at most ``limit``;
    the flag says whether every sitemap could be read and nothing was left out."""
    pages: list[Entry] = []
    whole = True
    queue = [(url, 0) for url in urls]
    children = 0
    while queue:
        url, level = queue.pop(0)
        try:
            response = fetcher.get(url, max_bytes=MAX_SITEMAP_BYTES, allowed=allowed,
                                   accept="application/xml, text/xml, */*")
        except FetchError:
            whole = False
            continue
        if response.status != 200:
            whole = whole and response.status in (404, 410)
            continue
        kind, entries = parse(response.body)
        if kind == "sitemapindex" and level == 0:
            for entry in entries:
                children += 1
                if children > MAX_CHILD_SITEMAPS:
                    whole = False
                    break
                queue.append((entry.loc, 1))
        elif kind == "urlset":
            room = limit - len(pages)
            pages.extend(entries[:max(room, 0)])
            whole = whole and len(entries) <= room
    return pages, whole
