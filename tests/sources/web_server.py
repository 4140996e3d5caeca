"""A web site on loopback for the web connector's tests: a mutable dict of pages the test changes between scans.

It speaks plain HTTP/1.1 through the standard library's ``http.server`` (threaded): ``ETag`` /
``If-None-Match`` and ``Last-Modified`` / ``If-Modified-Since`` answered with ``304 Not Modified`` as RFC 9110
§13.1 says, redirects, error statuses, and one "endless" body streamed without ``Content-Length``. Every
request is logged (path and headers) so a test can check what the connector asked for.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Resource:
    body: bytes = b""
    content_type: str = "text/html; charset=utf-8"
    status: int = 200
    etag: str = ""                 # served as ETag; If-None-Match equal to it → 304
    last_modified: str = ""        # served as Last-Modified; If-Modified-Since equal to it → 304
    location: str = ""             # with a 3xx status: where it redirects
    endless: bool = False          # stream this body forever, without Content-Length
    headers: dict[str, str] = field(default_factory=dict)


def page(body: str, **kwargs) -> Resource:
    return Resource(body.encode("utf-8"), **kwargs)


def http_date(seconds: float) -> str:
    return formatdate(seconds, usegmt=True)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format, *args):  # keep test output quiet
        pass

    def do_GET(self):  # noqa: N802 - http.server's method name
        site = self.server.site
        with site.lock:
            site.log.append((self.path, dict(self.headers)))
            resource = site.pages.get(self.path)
        if resource is None:
            return self._send(404, b"not found", "text/plain")
        if resource.endless:
            return self._endless(resource)
        if 300 <= resource.status < 400:
            return self._send(resource.status, b"", "text/plain", {"Location": resource.location})
        extra = dict(resource.headers)
        if resource.etag:
            extra["ETag"] = resource.etag
        if resource.last_modified:
            extra["Last-Modified"] = resource.last_modified
        if resource.status == 200 and self._not_modified(resource):
            return self._send(304, b"", "", extra)
        self._send(resource.status, resource.body, resource.content_type, extra)

    def _not_modified(self, resource: Resource) -> bool:
        if resource.etag and self.headers.get("If-None-Match"):
            return self.headers["If-None-Match"] == resource.etag
        return bool(resource.last_modified) and self.headers.get("If-Modified-Since") == resource.last_modified

    def _send(self, status: int, body: bytes, content_type: str, extra: dict | None = None):
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        if status != 304:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if status != 304:
            self.wfile.write(body)

    def _endless(self, resource: Resource):
        self.send_response(200)
        self.send_header("Content-Type", resource.content_type)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        chunk = resource.body or b"x" * 65536
        try:
            for _ in range(100_000):             # about 6 GiB: the client must stop long before
                self.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    site: Site

    def handle_error(self, request, client_address):  # a client that hangs up (the byte cap) is expected
        pass


class Site:
    """``with Site() as site: site.pages["/"] = page("<html>…")``; ``site.url("/a")`` is its address."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self.pages: dict[str, Resource] = {}
        self.log: list[tuple[str, dict]] = []
        self.lock = threading.Lock()
        self.server = _Server((host, port), _Handler)
        self.server.site = self
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def url(self, path: str = "/") -> str:
        return f"http://{self.server.server_address[0]}:{self.port}{path}"

    def requested(self) -> list[str]:
        with self.lock:
            return [path for path, _headers in self.log]

    def clear_log(self) -> None:
        with self.lock:
            self.log.clear()

    def __enter__(self) -> Site:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
