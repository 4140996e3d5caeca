"""Stage 1 of the web connector: one HTTP GET, bounded, with conditional validators and checked redirects.

The body is streamed and stops at a byte cap (a ``Content-Length`` over it is refused before any byte is read);
each request has timeouts and the download a deadline. Redirects are followed here, every target checked by
``core.net.netguard`` and the caller's ``allowed`` rule before it is requested (at most :data:`MAX_REDIRECTS`).
Each URL is parsed and resolved once (``netguard.target``) and connected at that address (``core.net.pinned``), so
DNS rebinding reaches nothing. The stored ETag / Last-Modified are sent (RFC 9110 §13.1); a 304 has no body.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import requests

from core.net import netguard
from core.net.pinned import pinned_session
from sources.kinds.base import SourceError
from sources.kinds.web_errors import text

MAX_REDIRECTS = 5
CHUNK = 64 * 1024


class FetchError(Exception):
    """One URL could not be fetched; ``code`` is registered (web_errors.py or sources/errors.py)."""

    def __init__(self, code: str, message: str, url: str):
        super().__init__(message)
        self.code = code
        self.message = message
        self.url = url


@dataclass
class Response:
    url: str                       # the final URL, after redirects
    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""

    @property
    def content_type(self) -> str:
        return self.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()

    @property
    def etag(self) -> str:
        return self.headers.get("ETag", "")

    @property
    def last_modified(self) -> str:
        return self.headers.get("Last-Modified", "")


def origin(url: str) -> str:
    """scheme://host[:port] of ``url``, lower-cased, the default port dropped."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    if port is None or (scheme, port) in (("http", 80), ("https", 443)):
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


class Fetcher:
    """A ``requests`` session with the platform's User-Agent, caps and timeouts.

    ``authorization`` (the source's optional credential) is sent only to ``auth_origins`` — never to a
    host a redirect leads to. ``interval_s``: the polite pause between two requests (the source's
    ``delay_s`` or the site's robots.txt ``Crawl-delay``, whichever is longer).
    """

    def __init__(self, *, user_agent: str, timeout_s: float, authorization: str = "",
                 auth_origins: frozenset[str] = frozenset(), interval_s: float = 0.0):
        self.interval_s = interval_s
        self._last = 0.0
        self.session, self.adapter = pinned_session()
        self.session.headers.update({"User-Agent": user_agent, "Accept-Encoding": "gzip, deflate"})
        self.timeout_s = timeout_s
        self.authorization = authorization
        self.auth_origins = auth_origins

    def close(self) -> None:
        self.session.close()

    def get(self, url: str, *, max_bytes: int, validators: Callable[[str], tuple[str, str]] | None = None,
            allowed: Callable[[str], bool] | None = None, accept: str = "*/*") -> Response:
        """GET ``url`` following redirects; ``validators(url)`` gives (etag, last_modified) for each hop's
        conditional headers; ``allowed(url)`` False for a redirect target raises ``web_off_site``."""
        current = url
        for hop in range(MAX_REDIRECTS + 1):
            try:
                checked = netguard.target(current)
            except SourceError as exc:
                raise FetchError(exc.code, exc.message, current) from None
            if hop and allowed is not None and not allowed(current):
                raise FetchError("web_off_site", text("web_off_site", url=url, target=current), url)
            self.adapter.pin(checked)
            headers = {"Accept": accept, "Host": checked.netloc}
            etag, modified = validators(current) if validators else ("", "")
            if etag:
                headers["If-None-Match"] = etag
            if modified:
                headers["If-Modified-Since"] = modified
            if self.authorization and f"{checked.scheme}://{checked.netloc}" in self.auth_origins:
                headers["Authorization"] = self.authorization
            response = self._request(current, headers)
            if response.is_redirect and response.headers.get("Location"):
                current = urljoin(current, response.headers["Location"])
                response.close()
                continue
            return Response(current, response.status_code, dict(response.headers),
                            self._read(response, current, max_bytes))
        raise FetchError("web_too_many_redirects", text("web_too_many_redirects", url=url, limit=MAX_REDIRECTS), url)

    def _request(self, url: str, headers: dict[str, str]) -> requests.Response:
        wait = self._last + self.interval_s - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self._last = time.monotonic()
        try:
            return self.session.get(url, headers=headers, stream=True, allow_redirects=False,
                                    timeout=(min(self.timeout_s, 10.0), self.timeout_s))
        except requests.Timeout:
            raise FetchError("web_timeout", text("web_timeout", url=url, seconds=self.timeout_s), url) from None
        except requests.RequestException as exc:
            raise FetchError("web_fetch_failed", text("web_fetch_failed", url=url, error=type(exc).__name__), url) from None

    def _read(self, response: requests.Response, url: str, max_bytes: int) -> bytes:
        """The body, at most ``max_bytes`` (decoded: a gzip bomb stops at the cap too), within the deadline."""
        too_large = FetchError("web_too_large", text("web_too_large", url=url, limit=max_bytes), url)
        try:
            if response.status_code == 304 or response.status_code >= 400:
                return b""                       # no body wanted: a 304 has none, an error page is not read
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > max_bytes:
                raise too_large
            deadline = time.monotonic() + self.timeout_s
            body = bytearray()
            for chunk in response.iter_content(CHUNK):
                body += chunk
                if len(body) > max_bytes:
                    raise too_large
                if time.monotonic() > deadline:
                    raise FetchError("web_timeout", text("web_timeout", url=url, seconds=self.timeout_s), url)
            return bytes(body)
        except requests.Timeout:
            raise FetchError("web_timeout", text("web_timeout", url=url, seconds=self.timeout_s), url) from None
        except requests.RequestException as exc:
            raise FetchError("web_fetch_failed", text("web_fetch_failed", url=url, error=type(exc).__name__), url) from None
        finally:
            response.close()
