"""The Yuque OpenAPI (v2) as the Yuque connector uses it: a knowledge base (book), its documents, one document.

Following 语雀 OpenAPI 2.0 (https://www.yuque.com/yuque/developer/openapi; the same paths on space domains and
private deployments): the token in ``X-Auth-Token``, with a ``User-Agent``; ``GET /api/v2/repos/:namespace`` (or
``:book_id``), its ``/docs`` by ``offset`` and ``limit`` (at most 100, until ``meta.total``), ``/docs/:slug``.
Answers are ``{"data": ...}``; 401 refuses the token, 403 no permission, 404 not found, 429 too many requests,
each with a JSON ``message``.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from sources.kinds.base import SourceError
from sources.kinds.jsonapi import Answer, JsonClient, seconds_header

PAGE = 100
MAX_PAGES = 1000


class YuqueError(Exception):
    """A 4xx/5xx answer other than 401 and 429 (which the client handles)."""

    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status, self.message = status, message


def _throttled(answer: Answer) -> bool:
    return answer.status == 429


def _wait_hint(answer: Answer) -> float | None:
    return seconds_header(answer.headers, "Retry-After")


class YuqueClient:
    def __init__(self, http: JsonClient, namespace: str):
        self.http = http
        self.repo_path = "/api/v2/repos/" + "/".join(quote(part, safe="") for part in namespace.split("/"))

    def get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        answer = self.http.send_patiently("GET", path, params=params, throttled=_throttled, wait_hint=_wait_hint)
        body = answer.body if isinstance(answer.body, dict) else None
        if answer.status == 401:
            detail = (body or {}).get("message") or "Unauthorized"
            raise SourceError("source_auth_failed", f"Yuque refused the token: {detail}")
        if answer.status != 200:
            raise YuqueError(answer.status, str((body or {}).get("message") or "no message"))
        if body is None:
            raise SourceError("source_bad_answer", f"{path} answered HTTP 200 without JSON")
        return body

    def repo(self) -> dict[str, Any]:
        data = self.get(self.repo_path).get("data")
        if not isinstance(data, dict):
            raise SourceError("source_bad_answer", f"{self.repo_path} has no data")
        return data

    def docs(self) -> Iterator[dict[str, Any]]:
        """Every document of the book, following ``offset`` until ``meta.total`` (or an empty page)."""
        offset = 0
        for _ in range(MAX_PAGES):
            body = self.get(self.repo_path + "/docs", {"offset": offset, "limit": PAGE})
            page = [d for d in body.get("data") or [] if isinstance(d, dict)]
            yield from page
            offset += len(page)
            total = (body.get("meta") or {}).get("total")
            if not page or (isinstance(total, int) and offset >= total):
                return
        raise SourceError("source_bad_answer", f"{self.repo_path}/docs has more than {MAX_PAGES} pages")

    def doc(self, slug: str) -> dict[str, Any]:
        data = self.get(f"{self.repo_path}/docs/{quote(slug, safe='')}").get("data")
        if not isinstance(data, dict):
            raise SourceError("source_bad_answer", f"document {slug} has no data")
        return data

    def close(self) -> None:
        self.http.close()
