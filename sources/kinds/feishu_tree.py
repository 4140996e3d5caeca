"""The Feishu connector's listing stage: the docx documents of a wiki space's node tree and of a Drive folder's tree.

Both walks go depth first in the service's order: the children of every wiki node that ``has_child`` (a shortcut
to a page of the same space is left out: the page is read itself), every sub-folder's files. Only docx documents
are kept. A listing the app may not read below the top (one wiki subtree, one sub-folder) makes the walk
incomplete, so nothing is removed on that run; at the top it fails the whole source.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sources.kinds.base import Limits, ScanResult, SourceError
from sources.kinds.feishu_api import FeishuClient, FeishuError
from sources.kinds.jsonapi import TooLarge

SPACE_REFUSED = frozenset({131005, 131006})          # wiki: not found, permission denied


@dataclass(frozen=True)
class Page:
    """One docx document found by the walk."""

    key: str               # the wiki node token, or "drive:<file token>"
    document_id: str       # what the docx API reads
    title: str
    edit_time: str
    url: str

    @property
    def revision(self) -> str:
        """The edit time with the title: a rename does not change the edit time but does change the document."""
        return f"{self.edit_time}:{hashlib.sha1(self.title.encode()).hexdigest()[:10]}"


@dataclass
class Walk:
    client: FeishuClient
    limits: Limits
    result: ScanResult
    cancelled: Callable[[], bool]
    pages: list[Page] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)

    def _room(self, token: str) -> bool:
        """False once the walk has visited too many nodes or holds ``max_items`` documents (then it is incomplete)."""
        self.seen.add(token)
        if len(self.seen) > 20 * self.limits.max_items + 1000:
            self.result.complete, self.result.note = False, f"stopped after {len(self.seen) - 1} listed nodes"
            return False
        return True

    def _keep(self, page: Page) -> bool:
        if len(self.pages) >= self.limits.max_items:
            self.result.complete, self.result.note = False, f"stopped at {self.limits.max_items} documents"
            return False
        self.pages.append(page)
        return True

    def _listed(self, list_children: Callable[[str], Iterator[dict[str, Any]]], parent: str, top: str,
                refused: Callable[[FeishuError], SourceError]) -> list[dict[str, Any]] | None:
        """The children of ``parent``; None (and the walk incomplete) when a level below the top may not be listed."""
        try:
            return list(list_children(parent))
        except (FeishuError, TooLarge) as exc:
            if parent != top:
                self.result.complete, self.result.note = False, f"could not list under {parent}: {exc}"
                return None
            if isinstance(exc, TooLarge):
                raise SourceError("source_bad_answer", str(exc)) from None
            raise refused(exc) from None

    def wiki(self, space_id: str, web_url: str) -> None:
        def refused(exc: FeishuError) -> SourceError:
            if exc.code in SPACE_REFUSED or exc.status in (403, 404):
                return SourceError("feishu_space_unavailable", f"wiki space {space_id}: {exc}")
            return SourceError("feishu_api_error", str(exc))

        stack = [""]
        while stack and not self.cancelled():
            parent = stack.pop()
            children = self._listed(lambda p: self.client.wiki_children(space_id, p), parent, "", refused)
            below = []
            for node in children or []:
                token = str(node.get("node_token") or "")
                if not token or token in self.seen:
                    continue
                if not self._room(token):
                    return
                shortcut_here = node.get("node_type") == "shortcut" and str(node.get("origin_space_id") or "") == space_id
                if node.get("obj_type") == "docx" and node.get("obj_token") and not shortcut_here:
                    page = Page(token, str(node["obj_token"]), str(node.get("title") or ""),
                                str(node.get("obj_edit_time") or ""), f"{web_url}/wiki/{token}")
                    if not self._keep(page):
                        return
                if node.get("has_child"):
                    below.append(token)
            stack.extend(reversed(below))

    def drive(self, folder_token: str, web_url: str) -> None:
        def refused(exc: FeishuError) -> SourceError:
            if exc.status in (403, 404):
                return SourceError("feishu_folder_unavailable", f"Drive folder {folder_token}: {exc}")
            return SourceError("feishu_api_error", str(exc))

        stack = [folder_token]
        while stack and not self.cancelled():
            parent = stack.pop()
            files = self._listed(self.client.folder_files, parent, folder_token, refused)
            below = []
            for file in files or []:
                token = str(file.get("token") or "")
                if not token or token in self.seen:
                    continue
                if not self._room(token):
                    return
                if file.get("type") == "folder":
                    below.append(token)
                elif file.get("type") == "docx":
                    url = str(file.get("url") or f"{web_url}/docx/{token}")
                    page = Page(f"drive:{token}", token, str(file.get("name") or ""), str(file.get("modified_time") or ""), url)
                    if not self._keep(page):
                        return
            stack.extend(reversed(below))
