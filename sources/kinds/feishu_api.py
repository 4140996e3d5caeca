"""The Feishu / Lark open platform API as the Feishu connector uses it: the app's tenant token, the wiki node tree,
a Drive folder's files, a document's blocks.

The calls (docs/sources/feishu.md, "How a run reads the space", links their published documents): the tenant token
(``POST /open-apis/auth/v3/tenant_access_token/internal``), then paginated listings of a wiki space's nodes, a Drive
folder's files and a docx document's blocks. Every answer is ``{"code": N, "msg": ...}`` (0 is success); rate
limits answer HTTP 429 (400 on older APIs) with code 99991400 and ``x-ogw-ratelimit-reset`` seconds to wait.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from sources.kinds.base import SourceError
from sources.kinds.jsonapi import Answer, JsonClient, TooLarge, seconds_header

TOKEN_PATH = "/open-apis/auth/v3/tenant_access_token/internal"
RATE_LIMITED = 99991400
TOKEN_INVALID = frozenset({99991661, 99991663, 99991668})   # missing, invalid, expired tenant/user token
NODE_PAGE = 50
FILE_PAGE = 200
BLOCK_PAGE = 500
MAX_PAGES = 1000          # a paginated listing longer than this is a broken or hostile server
_TOKEN_MARGIN_S = 300     # renew five minutes before the service says the token expires


class FeishuError(Exception):
    """A non-zero ``code`` from one call (not auth or rate limiting, which the client handles)."""

    def __init__(self, status: int, code: int, msg: str):
        super().__init__(f"HTTP {status}, code {code}: {msg}")
        self.status, self.code, self.msg = status, code, msg


def _throttled(answer: Answer) -> bool:
    return answer.status == 429 or (isinstance(answer.body, dict) and answer.body.get("code") == RATE_LIMITED)


def _wait_hint(answer: Answer) -> float | None:
    return seconds_header(answer.headers, "x-ogw-ratelimit-reset")


class FeishuClient:
    """The calls the connector makes, with the tenant token cached until shortly before it expires."""

    def __init__(self, http: JsonClient, app_id: str, app_secret: str):
        self.http = http
        self._app = {"app_id": app_id, "app_secret": app_secret}
        self._token = ""
        self._token_until = 0.0

    def _authenticate(self) -> str:
        answer = self.http.send_patiently("POST", TOKEN_PATH, body=self._app, throttled=_throttled, wait_hint=_wait_hint,
                                          headers={"Content-Type": "application/json; charset=utf-8"})
        body = answer.body if isinstance(answer.body, dict) else {}
        if body.get("code") != 0 or not body.get("tenant_access_token"):
            if "code" not in body:
                raise SourceError("source_bad_answer", f"the token endpoint answered HTTP {answer.status} without JSON")
            raise SourceError("source_auth_failed",
                              f"Feishu refused the app credentials: {body.get('msg', '')} (code {body.get('code')})")
        self._token = body["tenant_access_token"]
        self._token_until = time.monotonic() + max(0, int(body.get("expire") or 0) - _TOKEN_MARGIN_S)
        return self._token

    def _bearer(self) -> str:
        if not self._token or time.monotonic() >= self._token_until:
            return self._authenticate()
        return self._token

    def get(self, path: str, params: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """``data`` of a GET and the answer's size; one fresh token and one retry when the service says the token
        is no longer valid."""
        for renewed in (False, True):
            answer = self.http.send_patiently("GET", path, params=params, throttled=_throttled, wait_hint=_wait_hint,
                                              headers={"Authorization": f"Bearer {self._bearer()}"})
            body = answer.body
            if not isinstance(body, dict) or not isinstance(body.get("code"), int):
                raise SourceError("source_bad_answer", f"{path} answered HTTP {answer.status} without Feishu's JSON")
            if body["code"] in TOKEN_INVALID and not renewed:
                self._token = ""
                continue
            if body["code"] in TOKEN_INVALID:
                raise SourceError("source_auth_failed", f"Feishu does not accept a fresh tenant token: {body.get('msg')}")
            if body["code"] != 0:
                raise FeishuError(answer.status, body["code"], str(body.get("msg", "")))
            data = body.get("data")
            return (data if isinstance(data, dict) else {}), answer.size
        raise AssertionError("unreachable")

    def _pages(self, path: str, params: dict[str, Any], budget: int = 0, *, items: str = "items",
               next_token: str = "page_token") -> Iterator[dict[str, Any]]:
        """Every item of a paginated listing; ``budget`` (bytes, 0 for none) bounds all its pages together."""
        token, seen, spent = "", set(), 0
        for _ in range(MAX_PAGES):
            data, size = self.get(path, {**params, **({"page_token": token} if token else {})})
            spent += size
            if budget and spent > budget:
                raise TooLarge(f"{path} is longer than {budget} bytes")
            for item in data.get(items) or []:
                if isinstance(item, dict):
                    yield item
            token = str(data.get(next_token) or "")
            if not data.get("has_more") or not token or token in seen:
                return
            seen.add(token)
        raise SourceError("source_bad_answer", f"{path} has more than {MAX_PAGES} pages")

    def wiki_children(self, space_id: str, parent: str = "") -> Iterator[dict[str, Any]]:
        """The child nodes of ``parent`` (the space's top level when empty), all pages."""
        params: dict[str, Any] = {"page_size": NODE_PAGE}
        if parent:
            params["parent_node_token"] = parent
        return self._pages(f"/open-apis/wiki/v2/spaces/{space_id}/nodes", params)

    def folder_files(self, folder_token: str) -> Iterator[dict[str, Any]]:
        """The files and folders directly in a Drive folder, all pages (``data.files``, ``next_page_token``)."""
        return self._pages("/open-apis/drive/v1/files", {"folder_token": folder_token, "page_size": FILE_PAGE},
                           items="files", next_token="next_page_token")

    def document_blocks(self, document_id: str, budget: int) -> Iterator[dict[str, Any]]:
        """Every block of a docx document, in document order (the page block first), within ``budget`` bytes."""
        return self._pages(f"/open-apis/docx/v1/documents/{document_id}/blocks", {"page_size": BLOCK_PAGE}, budget)

    def close(self) -> None:
        self.http.close()
