"""A Yuque OpenAPI (v2) server on loopback, as its published API document describes it at the wire.

One book (``GET /api/v2/repos/:group/:book`` or ``/api/v2/repos/:book_id``), its documents
(``GET /api/v2/repos/:namespace/docs`` with ``offset``/``limit`` and ``meta.total``) and each document's detail
(``GET /api/v2/repos/:namespace/docs/:slug``). The token travels in ``X-Auth-Token``; a missing or wrong one
answers 401, a missing User-Agent 403, an unknown book or document 404, and rate limiting 429 with
``Retry-After``; errors carry a JSON ``message``. Pages hold at most two documents so listings take several.
"""
from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any
from urllib.parse import unquote

from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from tests.sources.feishu_server import QuietHandler

PAGE_CAP = 2


class YuqueServer:
    def __init__(self, *, token: str = "yq-token-1234", namespace: str = "team/handbook", book_id: int = 41966892):
        self.token, self.namespace, self.book_id = token, namespace, book_id
        self.docs: dict[str, dict[str, Any]] = {}     # slug → document detail (insertion order = the book's order)
        self.forbidden: set[str] = set()
        self.throttle_next = 0
        self.throttled = 0
        self.next_id = 1000
        self.hits: Counter[str] = Counter()
        self.agents: set[str] = set()
        self.lock = threading.Lock()
        self._server = make_server("127.0.0.1", 0, self._app, threaded=True, request_handler=QuietHandler)
        self.base_url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> YuqueServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._thread.join(5)

    # --- what a test changes -------------------------------------------------------------------------------------
    def put_doc(self, slug: str, title: str, *, body: str = "", body_html: str = "", fmt: str = "markdown",
                updated: str = "2026-11-01T08:00:00.000Z", **extra: Any) -> None:
        with self.lock:
            existing = self.docs.get(slug)
            if existing is None:
                self.next_id += 1
            self.docs[slug] = {
                "id": existing["id"] if existing else self.next_id, "type": "Doc", "slug": slug, "title": title,
                "book_id": self.book_id, "format": fmt, "body": body, "body_html": body_html,
                "body_lake": body if fmt == "lake" else "", "body_draft": "", "public": 0, "status": 1,
                "created_at": "2026-10-01T08:00:00.000Z", "updated_at": updated, "content_updated_at": updated,
                "word_count": len(body), **extra}

    def delete_doc(self, slug: str) -> None:
        with self.lock:
            del self.docs[slug]

    # --- the wire --------------------------------------------------------------------------------------------
    @Request.application
    def _app(self, request: Request) -> Response:
        with self.lock:
            self.hits[request.path] += 1
            if self.throttle_next > 0:
                self.throttle_next -= 1
                self.throttled += 1
                return _json({"status": 429, "message": "Too Many Requests"}, 429, {"Retry-After": "1"})
            if request.headers.get("X-Auth-Token") != self.token:
                return _json({"status": 401, "message": "Unauthorized"}, 401)
            agent = request.headers.get("User-Agent", "")
            if not agent:
                return _json({"status": 403, "message": "User-Agent required"}, 403)
            self.agents.add(agent)
            parts = [unquote(p) for p in request.path.strip("/").split("/")]
            if parts[:3] != ["api", "v2", "repos"]:
                return _json({"status": 404, "message": "Not Found"}, 404)
            rest = parts[3:]
            book = rest[:1] if rest[:1] == [str(self.book_id)] else rest[:2]
            if "/".join(book) not in (self.namespace, str(self.book_id)):
                return _json({"status": 404, "message": "Not Found"}, 404)
            tail = rest[len(book):]
            if not tail:
                return self._book()
            if tail == ["docs"]:
                return self._list(request)
            if len(tail) == 2 and tail[0] == "docs":
                return self._detail(tail[1])
            return _json({"status": 404, "message": "Not Found"}, 404)

    def _book(self) -> Response:
        group, slug = self.namespace.split("/")
        return _json({"data": {"id": self.book_id, "type": "Book", "slug": slug, "name": "团队手册",
                               "namespace": self.namespace, "user": {"login": group}, "items_count": len(self.docs)}})

    def _list(self, request: Request) -> Response:
        try:
            offset = int(request.args.get("offset", "0"))
            limit = int(request.args.get("limit", "100"))
        except ValueError:
            return _json({"status": 400, "message": "offset and limit must be integers"}, 400)
        if limit < 1 or limit > 100 or offset < 0:
            return _json({"status": 422, "message": "limit must be 1..100"}, 422)
        listed = [{k: v for k, v in d.items() if not k.startswith("body") and k != "format"} for d in self.docs.values()]
        page = listed[offset:offset + min(limit, PAGE_CAP)]
        return _json({"meta": {"total": len(listed)}, "data": page})

    def _detail(self, slug_or_id: str) -> Response:
        doc = self.docs.get(slug_or_id) or next((d for d in self.docs.values() if str(d["id"]) == slug_or_id), None)
        if doc is None:
            return _json({"status": 404, "message": "Not Found"}, 404)
        if doc["slug"] in self.forbidden:
            return _json({"status": 403, "message": "Forbidden"}, 403)
        return _json({"data": doc})


def _json(body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(body, ensure_ascii=False), status=status, headers=headers,
                    content_type="application/json; charset=utf-8")
