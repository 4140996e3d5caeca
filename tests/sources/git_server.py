"""A Git repository the tests commit to, and git's own smart HTTP server for it on loopback.

``GitSource`` drives a real repository with the git command line. ``SmartHTTPServer`` serves a folder of
repositories the way a Git host does: every request must carry ``Authorization: Basic`` (any user name, the
token as password, as GitHub and GitLab take personal tokens) or ``Bearer`` with the right token, else 401 with
a ``WWW-Authenticate`` challenge; accepted requests go to ``git http-backend`` (git-http-backend(1)) as CGI,
which speaks protocol v2 and honours partial-clone filters.
"""
from __future__ import annotations

import base64
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

GIT_ENV = {"GIT_AUTHOR_NAME": "测试", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "测试",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


class GitSource:
    """A non-bare repository with a working tree: write, remove, rename files and commit."""

    def __init__(self, path: Path, branch: str = "main"):
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", branch)
        self.git("config", "uploadpack.allowFilter", "true")
        self.git("config", "uploadpack.allowAnySHA1InWant", "true")

    def git(self, *args: str) -> str:
        env = {**os.environ, **GIT_ENV}
        done = subprocess.run(["git", *args], cwd=self.path, env=env, capture_output=True, check=True, timeout=60)
        return done.stdout.decode().strip()

    def write(self, name: str, data: str | bytes) -> None:
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)

    def commit(self, message: str = "change") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD")

    def blob(self, name: str, rev: str = "HEAD") -> str:
        return self.git("rev-parse", f"{rev}:{name}")

    @property
    def url(self) -> str:
        return self.path.as_uri()


class _Handler(BaseHTTPRequestHandler):
    server: SmartHTTPServer

    def log_message(self, *args) -> None:   # quiet
        pass

    def _authorised(self) -> bool:
        header = self.headers.get("Authorization", "")
        self.server.seen_auth.append(header)
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "bearer":
            return value == self.server.token
        if scheme.lower() == "basic":
            try:
                _, _, password = base64.b64decode(value).decode().partition(":")
            except ValueError:
                return False
            return password == self.server.token
        return False

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _serve(self) -> None:
        self.server.requests.append(self.path)
        body = self._body() if self.command == "POST" else b""
        if not self._authorised():
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        parts = urlsplit(self.path)
        env = {"PATH": os.environ["PATH"], "GIT_PROJECT_ROOT": str(self.server.root), "GIT_HTTP_EXPORT_ALL": "1",
               "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
               "REQUEST_METHOD": self.command, "PATH_INFO": parts.path, "QUERY_STRING": parts.query,
               "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
               "REMOTE_USER": "reader", "REMOTE_ADDR": "127.0.0.1", "GIT_PROTOCOL": self.headers.get("Git-Protocol", "")}
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        done = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, timeout=60)
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = _serve
    do_POST = _serve


class SmartHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root: Path, token: str):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.root = root
        self.token = token
        self.requests: list[str] = []
        self.seen_auth: list[str] = []
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    def __enter__(self) -> SmartHTTPServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        self.server_close()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/{name}"
