"""Feishu (Lark) wiki space → documents: every new-version document (docx) of one wiki space, as Markdown.

Stages: the tenant token and the calls (sources/kinds/feishu_api.py) → the node tree, walked from the space's top
level through every node that ``has_child`` → for each docx node, Unchanged when its revision (the document's
``obj_edit_time`` and title) matches the previous run's, else its blocks → Markdown (sources/kinds/feishu_blocks.py).

Other node types (sheets, bitables, mind notes, files, old-version docs, shortcuts to pages of the same space) are
not documents here and are left out; their children are still walked. A document the app may not read is Failed
(``source_item_forbidden``) and keeps its previous version; a subtree the app may not list makes the scan
incomplete, so nothing is removed on that run.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from django.utils.translation import gettext_lazy as _

from sources.kinds.base import (Failed, Fetched, Item, Known, Limits, ScanResult, SettingField, SourceError, Unchanged,
                                register)
from sources.kinds.feishu_api import FeishuClient, FeishuError
from sources.kinds.feishu_blocks import to_markdown
from sources.kinds.jsonapi import JsonClient, TooLarge
from sources.kinds.netguard import check_url
from sources.kinds import feishu_errors  # noqa: F401  (registers the codes this connector raises)
from sources.kinds import service_settings as svc

DEFAULT_BASE_URL = "https://open.feishu.cn"
# Where people open a wiki page: https://<tenant domain>/wiki/<node_token>. The API host does not say the tenant's
# domain, so ``web_url`` sets it; without it the service's main site is used, which sends a signed-in reader on.
WEB_HOSTS = {"open.feishu.cn": "https://www.feishu.cn", "open.larksuite.com": "https://www.larksuite.com"}
SPACE_REFUSED = frozenset({131005, 131006})          # wiki: not found, permission denied
DOC_REFUSED = frozenset({1770032, 131006, 91204})    # docx forbidden, wiki permission denied, no read permission
SETTINGS = ("base_url", "app_id", "space_id", "web_url")


def _revision(node: Mapping[str, Any]) -> str:
    title = hashlib.sha1(str(node.get("title") or "").encode()).hexdigest()[:10]
    return f"{node.get('obj_edit_time') or ''}:{title}"


@register
class FeishuConnector:
    kind = "feishu"
    secret_fields = ("app_secret",)
    fields = (
        SettingField("base_url", _("Open platform address"), type="url", default=DEFAULT_BASE_URL,
                     help=_("https://open.feishu.cn for Feishu, https://open.larksuite.com for Lark.")),
        SettingField("app_id", _("App ID"), required=True,
                     help=_("The custom app's App ID (cli_…), on its Credentials page in the developer console.")),
        SettingField("app_secret", _("App Secret"), type="secret", required=True),
        SettingField("space_id", _("Wiki space ID"), required=True,
                     help=_("The number at the end of the space's settings address (…/wiki/settings/<space id>).")),
        SettingField("web_url", _("Your Feishu web address"), type="url",
                     help=_("e.g. https://example.feishu.cn; links to pages use it.")),
    )

    @classmethod
    def clean_settings(cls, settings: Mapping[str, Any]) -> dict[str, Any]:
        svc.unknown(settings, SETTINGS)
        cleaned = {
            "base_url": svc.base_url(settings, "base_url", DEFAULT_BASE_URL),
            "app_id": svc.text(settings, "app_id", r"[A-Za-z0-9_-]{1,64}", "cli_a1b2c3d4e5f6"),
            "space_id": svc.text(settings, "space_id", r"[A-Za-z0-9_-]{1,64}", "7034502641455497244"),
        }
        if settings.get("web_url"):
            cleaned["web_url"] = svc.base_url(settings, "web_url", "https://example.feishu.cn")
        return cleaned

    def __init__(self, settings: Mapping[str, Any], credentials: Mapping[str, str], *, limits: Limits) -> None:
        self.settings = self.clean_settings(settings)
        self.limits = limits
        self.secret = str(credentials.get("app_secret") or "")
        host = urlsplit(self.settings["base_url"]).hostname or ""
        self.web_url = self.settings.get("web_url") or WEB_HOSTS.get(host, self.settings["base_url"])
        self.client: FeishuClient | None = None

    def _connect(self) -> FeishuClient:
        if not self.secret:
            raise SourceError("source_auth_failed", "no app_secret is stored for this source")
        check_url(self.settings["base_url"])
        http = JsonClient(self.settings["base_url"], timeout_s=self.limits.timeout_s,
                          max_bytes=self.limits.max_bytes_per_item, headers={"User-Agent": svc.USER_AGENT})
        return FeishuClient(http, self.settings["app_id"], self.secret)

    def scan(self, known: Mapping[str, Known], result: ScanResult, cancelled: Callable[[], bool]) -> Iterator[Item]:
        self.client = self.client or self._connect()
        nodes = self._walk(result, cancelled)
        names = svc.item_stems((n["node_token"], str(n.get("title") or "")) for n in nodes)
        for node in nodes:
            if cancelled():
                result.complete, result.note = False, "cancelled"
                return
            key, revision = node["node_token"], _revision(node)
            previous = known.get(key)
            if previous is not None and previous.revision == revision:
                yield Unchanged(key)
                continue
            yield self._fetch(node, revision, names[key] + ".md")

    def _list(self, parent: str) -> list[dict[str, Any]]:
        assert self.client is not None
        try:
            return list(self.client.wiki_children(self.settings["space_id"], parent))
        except FeishuError as exc:
            if exc.code in SPACE_REFUSED or exc.status in (403, 404):
                raise SourceError("feishu_space_unavailable", f"wiki space {self.settings['space_id']}: {exc}") from None
            raise SourceError("feishu_api_error", str(exc)) from None
        except TooLarge as exc:
            raise SourceError("source_bad_answer", str(exc)) from None

    def _walk(self, result: ScanResult, cancelled: Callable[[], bool]) -> list[dict[str, Any]]:
        """The space's docx nodes, depth first in the space's order, at most ``max_items``."""
        documents: list[dict[str, Any]] = []
        seen: set[str] = set()
        stack = [""]
        budget = 20 * self.limits.max_items + 1000    # nodes of every type a walk may visit
        while stack:
            parent = stack.pop()
            if cancelled():
                result.complete, result.note = False, "cancelled"
                return documents
            try:
                children = self._list(parent)
            except SourceError as exc:
                if not parent or exc.code not in ("feishu_space_unavailable", "feishu_api_error"):
                    raise
                result.complete, result.note = False, f"could not list under {parent}: {exc.message}"
                continue
            below = []
            for node in children:
                token = str(node.get("node_token") or "")
                if not token or token in seen:
                    continue
                seen.add(token)
                if len(seen) > budget:
                    result.complete, result.note = False, f"stopped after {budget} wiki nodes"
                    return documents
                if self._is_document(node):
                    if len(documents) >= self.limits.max_items:
                        result.complete, result.note = False, f"stopped at {self.limits.max_items} documents"
                        return documents
                    documents.append(node)
                if node.get("has_child"):
                    below.append(token)
            stack.extend(reversed(below))
        return documents

    def _is_document(self, node: Mapping[str, Any]) -> bool:
        if node.get("obj_type") != "docx" or not node.get("obj_token"):
            return False
        shortcut_here = (node.get("node_type") == "shortcut"
                         and str(node.get("origin_space_id") or "") == self.settings["space_id"])
        return not shortcut_here     # the original page is in this space and is read there

    def _fetch(self, node: Mapping[str, Any], revision: str, name: str) -> Item:
        assert self.client is not None
        key, url = node["node_token"], f"{self.web_url}/wiki/{node['node_token']}"
        try:
            blocks = list(self.client.document_blocks(node["obj_token"], budget=2 * self.limits.max_bytes_per_item))
        except FeishuError as exc:
            if exc.code in DOC_REFUSED or exc.status == 403:
                return Failed(key, "source_item_forbidden", f"Feishu refused to read {url}: {exc}", url)
            return Failed(key, "feishu_api_error", f"{url}: {exc}", url)
        except TooLarge as exc:
            return Failed(key, "source_item_too_large", f"{url}: {exc}", url)
        except SourceError as exc:
            if exc.code in ("source_auth_failed", "source_rate_limited"):
                raise
            return Failed(key, exc.code, f"{url}: {exc.message}", url)
        title, markdown = to_markdown(blocks)
        data = markdown.encode("utf-8")
        if len(data) > self.limits.max_bytes_per_item:
            return Failed(key, "source_item_too_large", f"{url} is over {self.limits.max_bytes_per_item} bytes", url)
        return Fetched(key=key, revision=revision, name=name, data=data, url=url,
                       title=title or str(node.get("title") or ""),
                       state={"obj_token": node["obj_token"], "obj_edit_time": str(node.get("obj_edit_time") or "")})

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
