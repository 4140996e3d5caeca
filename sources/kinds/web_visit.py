"""Stage 6 of the web connector: visit one URL and say what it is now (Fetched / Unchanged / Failed / gone).

Unchanged: the sitemap ``<lastmod>`` stored with it (no request), a ``304`` to the conditional GET, or a 200 whose
revision (the ETag, else Last-Modified, else ``sha256:`` of what is kept) is the stored one. ``404`` / ``410``: gone.
Other errors: Failed (a page seen before is walked through its stored links). A 200 HTML page → its main content
(``.md``, or ``.html`` when none was found); a linked document → its bytes; anything else is skipped. Each item
keeps its validators, its lastmod and, for pages, their same-site links. A page is known by its identity: the
final URL after redirects, or its same-site ``<link rel="canonical">``, with a default document (``index.html``)
dropped (web_crawl.identity). A Markdown page waits, :class:`Pending`, until the run's pages are read together
(web_pages.py).
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from sources.kinds.base import Failed, Fetched, Item, Known, Unchanged
from sources.kinds.web_crawl import FILE_EXTENSIONS, Names, Scope, canonical, file_extension, identity
from sources.kinds.web_errors import text
from sources.kinds.web_extract import MAX_LINKS, extract
from sources.kinds.web_fetch import Fetcher, FetchError, Response
from sources.kinds.web_pages import Pending, reading

HTML_TYPES = ("text/html", "application/xhtml+xml")
MAX_PAGE_BYTES = 10 * 1024 * 1024        # an HTML page larger than this is junk, whatever the file budget
TYPE_EXTENSIONS = {
    "application/pdf": ".pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/msword": ".doc",
    "application/vnd.ms-excel": ".xls",
    "application/vnd.ms-powerpoint": ".ppt",
    "text/markdown": ".md",
    "text/x-markdown": ".md",
    "text/plain": ".txt",
    "text/csv": ".csv",
}


@dataclass
class Outcome:
    item: Item | None = None
    key: str = ""                   # the canonical URL the item is known by (after redirects)
    links: list[str] = field(default_factory=list)
    gone: bool = False              # 404/410: the page no longer exists
    blind: bool = False             # failed and no stored links: the walk may have missed pages behind it
    pending: Pending | None = None  # a page whose item is made when the run's pages are read together


def _revision(response: Response, data: bytes) -> str:
    return response.etag or response.last_modified or "sha256:" + hashlib.sha256(data).hexdigest()


def _stored_links(known: Known | None) -> list[str]:
    links = known.state.get("links") if known is not None else None
    return [link for link in links if isinstance(link, str)] if isinstance(links, list) else []


class Visitor:
    def __init__(self, fetcher: Fetcher, scope: Scope, known: Mapping[str, Known], *, max_bytes: int,
                 names: Names, lastmods: Mapping[str, str]):
        self.fetcher = fetcher
        self.scope = scope
        self.known = known
        self.max_bytes = max_bytes
        self.names = names
        self.lastmods = lastmods

    def _validators(self, url: str) -> tuple[str, str]:
        known = self.known.get(identity(canonical(url) or ""))
        if known is None:
            return "", ""
        return str(known.state.get("etag", "")), str(known.state.get("last_modified", ""))

    def visit(self, url: str, *, allowed: Callable[[str], bool] | None = None) -> Outcome:
        known = self.known.get(identity(url))
        lastmod = self.lastmods.get(url, "")
        if known is not None and lastmod and known.state.get("lastmod") == lastmod:
            return Outcome(Unchanged(identity(url)), identity(url), _stored_links(known))
        try:
            response = self.fetcher.get(url, max_bytes=self.max_bytes, validators=self._validators,
                                        allowed=allowed or self.scope.on_site)
        except FetchError as exc:
            if exc.code == "web_off_site":
                return Outcome(None, url)      # no longer part of this site
            return self._failed(url, known, exc.code, exc.message)
        key = identity(canonical(response.url) or url)
        known = self.known.get(key)
        if response.status == 304 and known is not None:
            fresher = {**known.state, "lastmod": lastmod} if lastmod and known.state.get("lastmod") != lastmod else None
            return Outcome(Unchanged(key, state=fresher), key, _stored_links(known))
        if response.status in (404, 410):
            return Outcome(None, key, gone=True)
        if response.status != 200:
            return self._failed(key, known, "web_http_status",
                                text("web_http_status", url=key, status=response.status))
        return self._kept(key, known, response, lastmod)

    def _failed(self, key: str, known: Known | None, code: str, message: str) -> Outcome:
        links = _stored_links(known)
        return Outcome(Failed(key, code, message, url=key), key, links, blind=known is None)

    def _kept(self, key: str, known: Known | None, response: Response, lastmod: str) -> Outcome:
        state = {"etag": response.etag, "last_modified": response.last_modified, "lastmod": lastmod}
        if response.content_type in HTML_TYPES or (not response.content_type and not file_extension(key)):
            return self._page(key, known, response, state)
        ext = file_extension(key) or TYPE_EXTENSIONS.get(response.content_type, "")
        if not self.scope.files or ext not in FILE_EXTENSIONS:
            return Outcome(None, key)           # not a page and not a document: skipped
        return self._item(key, known, response, state, response.body, ext, "")

    def _page(self, key: str, known: Known | None, response: Response, state: dict) -> Outcome:
        if len(response.body) > MAX_PAGE_BYTES:
            return self._failed(key, known, "web_too_large", text("web_too_large", url=key, limit=MAX_PAGE_BYTES))
        page = extract(response.body, key)
        alias = identity(canonical(page.canonical) or "") if page.canonical else ""
        if alias and alias != key and self.scope.on_site(alias):
            key, known = alias, self.known.get(alias)      # <link rel="canonical">: the page's own name for itself
        links = []
        for found in page.links:
            link = canonical(found)
            if link and self.scope.on_site(link) and link not in links:
                links.append(link)
        links = links[:MAX_LINKS]
        state["links"] = links
        if not page.index or not self.scope.included(key) or not (page.markdown or page.has_text):
            return Outcome(None, key, links)    # walked through for its links, not kept
        if page.markdown:
            state.update(reading(page.markdown, page.title))
            pending = Pending(key, known, page.markdown, page.title, state, dict(response.headers))
            return Outcome(None, key, links, pending=pending)
        outcome = self._item(key, known, response, state, response.body, ".html", page.title)
        outcome.links = links
        return outcome

    def page_item(self, page: Pending, data: bytes, title: str) -> Item:
        """The item of a page read together with the run's others (web_pages.finish)."""
        response = Response(page.key, 200, page.headers)
        basis = f"{page.title}\n{page.markdown}".encode()     # the page's own text: the site's chrome may change
        item = self._item(page.key, page.known, response, dict(page.state), data, ".md", title, basis).item
        assert item is not None
        return item

    def _item(self, key: str, known: Known | None, response: Response, state: dict, data: bytes,
              ext: str, title: str, basis: bytes | None = None) -> Outcome:
        revision = _revision(response, data if basis is None else basis)
        if known is not None and known.revision == revision:
            state["name"] = known.state.get("name", "")
            return Outcome(Unchanged(key, state=state), key)
        name = self.names(key, ext)
        state["name"] = name
        return Outcome(Fetched(key=key, revision=revision, name=name, data=data, url=key,
                               title=title or name.rsplit("/", 1)[-1], state=state), key)
