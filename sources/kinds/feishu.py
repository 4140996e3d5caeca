"""Feishu (Lark) wiki space or Drive folder → documents: every new-version document (docx) in it, as Markdown.

Stages: the tenant token and the calls (sources/kinds/feishu_api.py) → the documents of the wiki space's node tree
and / or the Drive folder's tree (sources/kinds/feishu_tree.py) → for each, Unchanged when its revision (edit time
and title) matches the previous run's, else its blocks → Markdown (sources/kinds/feishu_blocks.py).

A document the app may not read is Failed (``source_item_forbidden``) and keeps its previous version.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar
from urllib.parse import urlsplit

from django.utils.translation import gettext_lazy as _

from sources.kinds import feishu_errors  # noqa: F401 - registers the codes this connector raises
from sources.kinds import service_settings as svc
from sources.kinds.base import Failed, Fetched, Item, Known, Limits, ScanResult, SettingField, SourceError, Unchanged, register
from sources.kinds.feishu_api import FeishuClient, FeishuError
from sources.kinds.feishu_blocks import to_markdown
from sources.kinds.feishu_tree import Page, Walk
from sources.kinds.jsonapi import TooLarge, service_client

DEFAULT_BASE_URL = "https://open.feishu.cn"
# Where people open a wiki page: https://<tenant domain>/wiki/<node_token>. The API host does not say the tenant's
# domain, so ``web_url`` sets it; without it the service's main site is used, which sends a signed-in reader on.
WEB_HOSTS = {"open.feishu.cn": "https://www.feishu.cn", "open.larksuite.com": "https://www.larksuite.com"}
DOC_REFUSED = frozenset({1770032, 131006, 91204})    # docx forbidden, wiki permission denied, no read permission
SETTINGS = ("base_url", "app_id", "space_id", "folder_token", "web_url")
_TOKEN = r"[A-Za-z0-9_-]{1,64}"


@register
class FeishuConnector:
    kind: ClassVar[str] = "feishu"
    secret_fields: ClassVar[tuple[str, ...]] = ("app_secret",)
    fields: ClassVar[tuple[SettingField, ...]] = (
        SettingField("base_url", _("Open platform address"), type="url", default=DEFAULT_BASE_URL,
                     help=_("https://open.feishu.cn for Feishu, https://open.larksuite.com for Lark.")),
        SettingField("app_id", _("App ID"), required=True,
                     help=_("The custom app's App ID (cli_…), on its Credentials page in the developer console.")),
        SettingField("app_secret", _("App Secret"), type="secret", required=True),
        SettingField("space_id", _("Wiki space ID"),
                     help=_("The number at the end of the space's settings address (…/wiki/settings/<space id>).")),
        SettingField("folder_token", _("Drive folder token"),
                     help=_("The last part of a Drive folder's address (…/drive/folder/<token>); a wiki space, a "
                            "folder or both.")),
        SettingField("web_url", _("Your Feishu web address"), type="url",
                     help=_("e.g. https://example.feishu.cn; links to pages use it.")),
    )

    @classmethod
    def clean_settings(cls, settings: Mapping[str, Any]) -> dict[str, Any]:
        cleaned = {**svc.service_base(settings, SETTINGS, DEFAULT_BASE_URL),
                   "app_id": svc.text(settings, "app_id", _TOKEN, "cli_a1b2c3d4e5f6")}
        for name, example in (("space_id", "7034502641455497244"), ("folder_token", "fldcnqquW1svRIYVT2Np6Iabcef")):
            value = svc.text(settings, name, _TOKEN, example, required=False)
            if value:
                cleaned[name] = value
        if "space_id" not in cleaned and "folder_token" not in cleaned:
            raise SourceError("source_settings_invalid", "space_id or folder_token is required (a wiki space or a Drive folder)")
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
        http = service_client(self.settings["base_url"], self.secret, secret_name="app_secret", limits=self.limits,
                              max_bytes=self.limits.max_bytes_per_item)
        return FeishuClient(http, self.settings["app_id"], self.secret)

    def scan(self, known: Mapping[str, Known], result: ScanResult, cancelled: Callable[[], bool]) -> Iterator[Item]:
        self.client = self.client or self._connect()
        walk = Walk(self.client, self.limits, result, cancelled)
        if "space_id" in self.settings:
            walk.wiki(self.settings["space_id"], self.web_url)
        if "folder_token" in self.settings:
            walk.drive(self.settings["folder_token"], self.web_url)
        stems = svc.item_stems((page.key, page.title) for page in walk.pages)
        for page in walk.pages:
            if cancelled():
                break
            previous = known.get(page.key)
            if previous is not None and previous.revision == page.revision:
                yield Unchanged(page.key)
            else:
                yield self._fetch(page, stems[page.key] + ".md")
        if cancelled():
            result.complete, result.note = False, "cancelled"

    def _fetch(self, page: Page, name: str) -> Item:
        assert self.client is not None
        key, url = page.key, page.url
        try:
            blocks = list(self.client.document_blocks(page.document_id, budget=2 * self.limits.max_bytes_per_item))
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
        return Fetched(key=key, revision=page.revision, name=name, data=data, url=url, title=title or page.title,
                       state={"document_id": page.document_id, "edit_time": page.edit_time})

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
