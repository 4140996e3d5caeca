"""A Feishu open platform on loopback, as its published API documents describe it at the wire.

The tenant token of a custom app (``POST /open-apis/auth/v3/tenant_access_token/internal``), a wiki space's child
nodes (``GET /open-apis/wiki/v2/spaces/{space_id}/nodes``), a Drive folder's files (``GET /open-apis/drive/v1/files``)
and a docx document's blocks (``GET /open-apis/docx/v1/documents/{document_id}/blocks``); bodies
``{"code", "msg", "data"}``; a missing or unknown token answers HTTP 400 with code 99991661 / 99991663; rate limiting
answers HTTP 429, code 99991400 and ``x-ogw-ratelimit-reset``. Page sizes are kept small so every listing takes
several pages. A test edits the space between scans through the methods below.
"""
from __future__ import annotations

import itertools
import json
import threading
from collections import Counter
from typing import Any

from werkzeug.serving import WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

NODE_PAGE_CAP = 2
BLOCK_PAGE_CAP = 3
MISSING_TOKEN = {"code": 99991661, "msg": "Missing access token for authorization. Please make a request with token attached."}
INVALID_TOKEN = {"code": 99991663, "msg": "Invalid access token for authorization. Please make a request with token attached."}
RATE_LIMITED = {"code": 99991400, "msg": "request trigger frequency limit"}


def docx_blocks(document_id: str, title: str, parts: list[tuple]) -> list[dict[str, Any]]:
    """The blocks the docx API answers for a page titled ``title`` whose body is ``parts``: ("h1".."h9", text),
    ("p", text), ("bullet"|"ordered", text[, children parts]), ("code", text), ("quote", text), ("todo", text, done),
    ("divider",), ("image",), ("table", rows)."""
    ids = (f"{document_id}_b{n}" for n in itertools.count(1))
    blocks: list[dict[str, Any]] = []
    page = {"block_id": document_id, "parent_id": "", "block_type": 1, "children": [],
            "page": {"elements": [_run(title)], "style": {}}}
    blocks.append(page)

    def text(content: str) -> dict[str, Any]:
        return {"elements": [_run(content)], "style": {}}

    def add(part: tuple, parent: dict[str, Any]) -> None:
        kind, block = part[0], {"block_id": next(ids), "parent_id": parent["block_id"], "children": []}
        parent["children"].append(block["block_id"])
        blocks.append(block)
        if kind[0] == "h" and kind[1:].isdigit():
            block.update(block_type=2 + int(kind[1:]), **{f"heading{kind[1:]}": text(part[1])})
        elif kind in ("p", "bullet", "ordered", "code", "quote"):
            field = {"p": "text"}.get(kind, kind)
            block.update(block_type={"p": 2, "bullet": 12, "ordered": 13, "code": 14, "quote": 15}[kind],
                         **{field: text(part[1])})
            for child in part[2] if len(part) > 2 else []:
                add(child, block)
        elif kind == "todo":
            block.update(block_type=17, todo={"elements": [_run(part[1])], "style": {"done": part[2]}})
        elif kind == "divider":
            block.update(block_type=22, divider={})
        elif kind == "image":
            block.update(block_type=27, image={"token": "boxcnImage", "width": 10, "height": 10})
        elif kind == "table":
            rows = part[1]
            block.update(block_type=31, table={"cells": [], "property": {"row_size": len(rows), "column_size": len(rows[0])}})
            for row in rows:
                for cell_text in row:
                    cell = {"block_id": next(ids), "parent_id": block["block_id"], "block_type": 32,
                            "table_cell": {}, "children": []}
                    block["table"]["cells"].append(cell["block_id"])
                    blocks.append(cell)
                    add(("p", cell_text), cell)
    for part in parts:
        add(part, page)
    return blocks


class QuietHandler(WSGIRequestHandler):
    def log_request(self, *args: Any, **kwargs: Any) -> None:
        pass


def _run(content: str, **style: Any) -> dict[str, Any]:
    return {"text_run": {"content": content, "text_element_style": style}}


class FeishuServer:
    """One tenant with one custom app and one wiki space."""

    def __init__(self, *, app_id: str = "cli_test_app", app_secret: str = "s3cret", space_id: str = "7034502641455497244"):
        self.app_id, self.app_secret, self.space_id = app_id, app_secret, space_id
        self.nodes: dict[str, dict[str, Any]] = {}        # node_token → node (insertion order = the space's order)
        self.blocks: dict[str, list[dict[str, Any]]] = {}  # obj_token → blocks
        self.files: dict[str, dict[str, Any]] = {}        # Drive file token → file (folders too)
        self.forbidden: set[str] = set()                  # obj_tokens (and folder tokens) the app may not read
        self.tokens: set[str] = set()
        self.issued = 0
        self.throttle_next = 0
        self.throttled = 0
        self.hits: Counter[str] = Counter()
        self.lock = threading.Lock()
        self._server = make_server("127.0.0.1", 0, self._app, threaded=True, request_handler=QuietHandler)
        self.base_url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FeishuServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._thread.join(5)

    # --- what a test changes -------------------------------------------------------------------------------------
    def put_node(self, node_token: str, title: str, *, obj_type: str = "docx", parent: str = "", edit_time: int = 1700000000,
                 parts: list[tuple] | None = None, **extra: Any) -> None:
        obj_token = extra.pop("obj_token", f"doxcn{node_token}")
        with self.lock:
            self.nodes[node_token] = {
                "space_id": self.space_id, "node_token": node_token, "obj_token": obj_token, "obj_type": obj_type,
                "parent_node_token": parent, "node_type": "origin", "origin_node_token": node_token,
                "origin_space_id": self.space_id, "title": title, "obj_create_time": str(edit_time),
                "obj_edit_time": str(edit_time), "node_create_time": str(edit_time), **extra}
            if obj_type == "docx":
                self.blocks[obj_token] = docx_blocks(obj_token, title, parts or [("p", f"{title} 的正文。")])

    def put_file(self, token: str, name: str, *, kind: str = "docx", parent: str, modified: int = 1700000000,
                 parts: list[tuple] | None = None) -> None:
        """A Drive file (``kind`` docx, folder, sheet, ...) in folder ``parent``."""
        with self.lock:
            self.files[token] = {"token": token, "name": name, "type": kind, "parent_token": parent,
                                 "url": f"https://example.feishu.cn/{kind}/{token}", "created_time": str(modified),
                                 "modified_time": str(modified), "owner_id": "ou_owner"}
            if kind == "docx":
                self.blocks[token] = docx_blocks(token, name, parts or [("p", f"{name} 的正文。")])

    def delete_node(self, node_token: str) -> None:
        with self.lock:
            node = self.nodes.pop(node_token)
            self.blocks.pop(node["obj_token"], None)

    def revoke_tokens(self) -> None:
        with self.lock:
            self.tokens.clear()

    # --- the wire --------------------------------------------------------------------------------------------
    @Request.application
    def _app(self, request: Request) -> Response:
        path = request.path
        with self.lock:
            self.hits[path] += 1
            if self.throttle_next > 0:
                self.throttle_next -= 1
                self.throttled += 1
                return _json(RATE_LIMITED, 429, {"x-ogw-ratelimit-limit": "100", "x-ogw-ratelimit-reset": "1"})
            if path == "/open-apis/auth/v3/tenant_access_token/internal" and request.method == "POST":
                return self._token(request)
            auth = request.headers.get("Authorization", "")
            if not auth:
                return _json(MISSING_TOKEN, 400)
            if not auth.startswith("Bearer ") or auth[len("Bearer "):] not in self.tokens:
                return _json(INVALID_TOKEN, 400)
            parts = path.strip("/").split("/")
            if parts[:4] == ["open-apis", "wiki", "v2", "spaces"] and len(parts) == 6 and parts[5] == "nodes":
                return self._nodes(request, parts[4])
            if parts == ["open-apis", "drive", "v1", "files"]:
                return self._files(request)
            if parts[:4] == ["open-apis", "docx", "v1", "documents"] and len(parts) == 6 and parts[5] == "blocks":
                return self._blocks(request, parts[4])
            return _json({"code": 404, "msg": "404 page not found"}, 404)

    def _token(self, request: Request) -> Response:
        try:
            body = json.loads(request.get_data() or b"{}")
        except ValueError:
            return _json({"code": 9499, "msg": "Bad Request"}, 400)
        if not body.get("app_id") or not body.get("app_secret"):
            return _json({"code": 10003, "msg": "invalid param"}, 400)
        if body["app_id"] != self.app_id or body["app_secret"] != self.app_secret:
            return _json({"code": 10014, "msg": "app secret invalid"}, 400)
        self.issued += 1
        token = f"t-{self.issued:04d}abcdef"
        self.tokens.add(token)
        return _json({"code": 0, "msg": "ok", "tenant_access_token": token, "expire": 7200})

    def _nodes(self, request: Request, space_id: str) -> Response:
        if space_id != self.space_id:
            return _json({"code": 131005, "msg": "not found"}, 400)
        parent = request.args.get("parent_node_token", "")
        children = [dict(n) for n in self.nodes.values() if n["parent_node_token"] == parent]
        for child in children:
            child["has_child"] = any(n["parent_node_token"] == child["node_token"] for n in self.nodes.values())
        return _page(children, request, NODE_PAGE_CAP, 50)

    def _files(self, request: Request) -> Response:
        folder = request.args.get("folder_token", "")
        known = folder in self.files and self.files[folder]["type"] == "folder"
        if not known or folder in self.forbidden:
            return _json({"code": 1061004, "msg": "forbidden"}, 403)
        return _page([f for f in self.files.values() if f["parent_token"] == folder], request, NODE_PAGE_CAP, 200,
                     items="files", next_token="next_page_token")

    def _blocks(self, request: Request, document_id: str) -> Response:
        if document_id in self.forbidden:
            return _json({"code": 1770032, "msg": "forbidden"}, 403)
        if document_id not in self.blocks:
            return _json({"code": 1770002, "msg": "not found"}, 404)
        return _page(self.blocks[document_id], request, BLOCK_PAGE_CAP, 500)


def _page(rows: list[dict[str, Any]], request: Request, cap: int, maximum: int, *, items: str = "items",
          next_token: str = "page_token") -> Response:
    try:
        size = int(request.args.get("page_size", "20"))
        start = int(request.args.get("page_token", "pt-0").removeprefix("pt-") or 0)
    except ValueError:
        return _json({"code": 99992402, "msg": "field validation failed"}, 400)
    if size < 1 or size > maximum:
        return _json({"code": 99992402, "msg": "field validation failed"}, 400)
    size = min(size, cap)
    page, more = rows[start:start + size], start + size < len(rows)
    data: dict[str, Any] = {items: page, "has_more": more}
    if more:
        data[next_token] = f"pt-{start + size}"
    return _json({"code": 0, "msg": "success", "data": data})


def _json(body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(body, ensure_ascii=False), status=status, headers=headers,
                    content_type="application/json; charset=utf-8")
