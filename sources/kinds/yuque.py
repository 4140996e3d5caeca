"""Yuque knowledge base (book) → documents: every published document of one book, Markdown or HTML.

The book (which checks the token and gives the namespace for links) → its documents, page by page (yuque_api.py)
→ for each, Unchanged when its revision (``content_updated_at`` and the title) matches, else its detail → a file:
a Markdown document's ``body`` under its title (``.md``), a Lake or HTML document's ``body_html`` (``.html``, for the
platform's HTML parser; ``body_lake`` without one). Left out: sheets, boards, data tables, threads and drafts never
published; a published document is read as published, private ones included (docs/sources/yuque.md).
"""
from __future__ import annotations

import hashlib
import html
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

from django.utils.translation import gettext_lazy as _

from sources.kinds import service_settings as svc
from sources.kinds import yuque_errors  # noqa: F401 - registers the codes this connector raises
from sources.kinds.base import Failed, Fetched, Item, Known, Limits, ScanResult, SettingField, SourceError, Unchanged, register
from sources.kinds.jsonapi import TooLarge, service_client
from sources.kinds.yuque_api import YuqueClient, YuqueError

DEFAULT_BASE_URL = "https://www.yuque.com"
DOCUMENT_TYPES = frozenset({"Doc", "HtmlDoc"})
SETTINGS = ("base_url", "namespace")
_JSON_OVERHEAD = 4     # a document's detail holds body, body_html, body_lake and body_draft


def _revision(doc: Mapping[str, Any]) -> str:
    title = hashlib.sha1(str(doc.get("title") or "").encode()).hexdigest()[:10]
    return f"{doc.get('content_updated_at') or doc.get('updated_at') or ''}:{title}"


def content(detail: Mapping[str, Any], title: str) -> tuple[str, bytes] | None:
    """(extension, bytes) of a document's detail, or None when it has no text the platform reads."""
    body = detail.get("body")
    if detail.get("format") == "markdown" and isinstance(body, str):
        return ".md", f"# {title}\n\n{body}\n".encode() if title else body.encode("utf-8")
    body_html = detail.get("body_html")
    if not (isinstance(body_html, str) and body_html.strip()) and detail.get("format") == "lake":
        # Lake markup is HTML elements (h1–h6, p, ul, table…) plus <card> embeds, which the HTML parser skips
        body_html = detail.get("body_lake") or body
    if isinstance(body_html, str) and body_html.strip():
        page = (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title></head>'
                f"<body><h1>{html.escape(title)}</h1>\n{body_html}\n</body></html>\n")
        return ".html", page.encode("utf-8")
    return None


@register
class YuqueConnector:
    kind: ClassVar[str] = "yuque"
    secret_fields: ClassVar[tuple[str, ...]] = ("token",)
    fields: ClassVar[tuple[SettingField, ...]] = (
        SettingField("base_url", _("Yuque address"), type="url", default=DEFAULT_BASE_URL,
                     help=_("https://www.yuque.com, your space's domain (https://<space>.yuque.com) or a private deployment.")),
        SettingField("namespace", _("Knowledge base"), required=True,
                     help=_("group/book from the knowledge base's address, e.g. yuque/developer; or its numeric id.")),
        SettingField("token", _("Token"), type="secret", required=True,
                     help=_("A token with read access to the knowledge base (account settings → Tokens).")),
    )

    @classmethod
    def clean_settings(cls, settings: Mapping[str, Any]) -> dict[str, Any]:
        return {**svc.service_base(settings, SETTINGS, DEFAULT_BASE_URL),
                "namespace": svc.text(settings, "namespace", r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+|\d+",
                                      "yuque/developer (group or user login / book slug) or a book id")}

    def __init__(self, settings: Mapping[str, Any], credentials: Mapping[str, str], *, limits: Limits) -> None:
        self.settings = self.clean_settings(settings)
        self.limits = limits
        self.token = str(credentials.get("token") or "")
        self.client: YuqueClient | None = None

    def _connect(self) -> YuqueClient:
        http = service_client(self.settings["base_url"], self.token, secret_name="Yuque token", limits=self.limits,
                              max_bytes=_JSON_OVERHEAD * self.limits.max_bytes_per_item,
                              headers={"X-Auth-Token": self.token, "Accept": "application/json"})
        return YuqueClient(http, self.settings["namespace"])

    def _listing(self, result: ScanResult) -> tuple[str, list[dict[str, Any]]]:
        """The book's namespace and its published documents, at most ``max_items``."""
        assert self.client is not None
        try:
            namespace = str(self.client.repo().get("namespace") or self.settings["namespace"])
            documents: list[dict[str, Any]] = []
            for doc in self.client.docs():
                if doc.get("type", "Doc") not in DOCUMENT_TYPES or str(doc.get("status", "1")) == "0" or not doc.get("slug"):
                    continue
                if len(documents) >= self.limits.max_items:
                    result.complete, result.note = False, f"stopped at {self.limits.max_items} documents"
                    break
                documents.append(doc)
        except YuqueError as exc:
            if exc.status in (403, 404):
                raise SourceError("yuque_repo_not_found", f"{self.settings['namespace']}: {exc}") from None
            raise SourceError("yuque_api_error", str(exc)) from None
        except TooLarge as exc:
            raise SourceError("source_bad_answer", str(exc)) from None
        return namespace, documents

    def scan(self, known: Mapping[str, Known], result: ScanResult, cancelled: Callable[[], bool]) -> Iterator[Item]:
        self.client = self.client or self._connect()
        namespace, documents = self._listing(result)
        stems = svc.item_stems((str(d["id"]), str(d.get("title") or d["slug"])) for d in documents)
        for doc in documents:
            if cancelled():
                result.complete, result.note = False, "cancelled"
                return
            key, revision = str(doc["id"]), _revision(doc)
            previous = known.get(key)
            if previous is not None and previous.revision == revision:
                yield Unchanged(key)
                continue
            item = self._fetch(doc, revision, stems[key], f"{self.settings['base_url']}/{namespace}/{doc['slug']}")
            if item is not None:
                yield item

    def _fetch(self, doc: Mapping[str, Any], revision: str, stem: str, url: str) -> Item | None:
        assert self.client is not None
        key, title = str(doc["id"]), str(doc.get("title") or "")
        try:
            detail = self.client.doc(str(doc["slug"]))
        except YuqueError as exc:
            if exc.status == 404:
                return None             # deleted since the listing: gone, so the runner removes it
            if exc.status == 403:
                return Failed(key, "source_item_forbidden", f"Yuque refused to read {url}: {exc}", url)
            return Failed(key, "yuque_api_error", f"{url}: {exc}", url)
        except TooLarge as exc:
            return Failed(key, "source_item_too_large", f"{url}: {exc}", url)
        except SourceError as exc:
            if exc.code in ("source_auth_failed", "source_rate_limited"):
                raise
            return Failed(key, exc.code, f"{url}: {exc.message}", url)
        converted = content(detail, title)
        if converted is None:
            return None                 # a sheet or board saved as a Doc: nothing the platform reads
        extension, data = converted
        if len(data) > self.limits.max_bytes_per_item:
            return Failed(key, "source_item_too_large", f"{url} is over {self.limits.max_bytes_per_item} bytes", url)
        return Fetched(key=key, revision=revision, name=stem + extension, data=data, url=url, title=title,
                       state={"slug": str(doc["slug"]), "format": str(detail.get("format") or "")})

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
