"""JSON over HTTP for the service connectors (Feishu, Yuque), and the client each one's scan starts with.

Every answer has a timeout and a byte cap, and its whole read may take ``READ_FACTOR`` per-request timeouts (a
server dripping one byte at a time never trips a socket timeout); redirects are not followed (one could point at an
address ``core.net.netguard`` refused); the service says to slow down: bounded retries. The address is resolved
and checked once, when the client is made, and every request connects there (``core.net.pinned``).
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

import requests
import urllib3

from core.net import netguard
from core.net.pinned import pinned_session
from sources.kinds.base import Limits, SourceError

USER_AGENT = "zhiku-sources/1.0 (knowledge-base sync)"   # Yuque refuses requests without one
_CHUNK = 64 * 1024
MAX_RETRIES = 3          # per request, after the first try
MAX_WAIT_S = 30.0        # the longest single back-off, whatever the service asks
READ_FACTOR = 4          # an answer's whole read may take this many per-request timeouts


class TooLarge(Exception):
    """The answer was longer than the cap (the caller turns this into a Failed item or a SourceError)."""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]
    body: Any = None                   # the decoded JSON, or None when the answer was not JSON
    size: int = 0


@dataclass
class JsonClient:
    """One HTTP session to one service's API (``base_url`` already checked by netguard)."""

    base_url: str
    timeout_s: float
    max_bytes: int
    headers: Mapping[str, str] = field(default_factory=dict)
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        self.base_url = self.base_url.rstrip("/")
        self._session, adapter = pinned_session()
        self._target = netguard.target(self.base_url)      # one resolution for the client's life: no rebinding
        adapter.pin(self._target)
        self._session.headers.update({**self.headers, "Host": self._target.netloc})

    def send(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
             body: Any = None, headers: Mapping[str, str] | None = None) -> Answer:
        """One request; transport failures become ``SourceError("source_unreachable")``."""
        try:
            response = self._session.request(
                method, self.base_url + path, params=params, json=body, headers=headers,
                timeout=self.timeout_s, stream=True, allow_redirects=False)
        except requests.Timeout:
            raise SourceError("source_unreachable", f"{self.base_url} did not answer within {self.timeout_s:g} s") from None
        except requests.RequestException as exc:
            raise SourceError("source_unreachable", f"{self.base_url} could not be reached: {exc}") from None
        with response:
            raw = self._read(response)
        try:
            decoded = json.loads(raw) if raw else None
        except ValueError:
            decoded = None
        return Answer(response.status_code, dict(response.headers), decoded, len(raw))

    def _read(self, response: requests.Response) -> bytes:
        # read1 returns what one read of the socket gave (decoded): a dripping server is seen between its bytes,
        # where iter_content would wait for a whole chunk
        parts: list[bytes] = []
        size = 0
        deadline = time.monotonic() + READ_FACTOR * self.timeout_s
        try:
            while chunk := response.raw.read1(_CHUNK, decode_content=True):
                size += len(chunk)
                if size > self.max_bytes:
                    raise TooLarge(f"the answer is longer than {self.max_bytes} bytes")
                if time.monotonic() > deadline:
                    raise SourceError("source_unreachable",
                                      f"{self.base_url} took over {READ_FACTOR * self.timeout_s:g} s to send one answer")
                parts.append(chunk)
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise SourceError("source_unreachable", f"{self.base_url} broke off its answer: {exc}") from None
        return b"".join(parts)

    def send_patiently(self, method: str, path: str, *, throttled: Callable[[Answer], bool],
                       wait_hint: Callable[[Answer], float | None], **kwargs) -> Answer:
        """``send``, retried up to ``MAX_RETRIES`` times while ``throttled(answer)``; the wait is the service's
        hint when it gives one (capped at ``MAX_WAIT_S``), else 0.5 s doubling."""
        for attempt in range(MAX_RETRIES + 1):
            answer = self.send(method, path, **kwargs)
            if not throttled(answer):
                return answer
            if attempt == MAX_RETRIES:
                break
            hint = wait_hint(answer)
            self.sleep(min(MAX_WAIT_S, hint if hint is not None else 0.5 * 2 ** attempt))
        raise SourceError("source_rate_limited",
                          f"{self.base_url} kept answering 'too many requests' after {MAX_RETRIES} retries")

    def close(self) -> None:
        self._session.close()


def service_client(base_url: str, secret: str, *, secret_name: str, limits: Limits, max_bytes: int,
                   headers: Mapping[str, str] | None = None) -> JsonClient:
    """A service connector's client for one scan: ``source_auth_failed`` when its secret is not stored, netguard's
    refusal for the API's address (``check_url``), else a client pinned to that address, sending ``USER_AGENT``."""
    if not secret:
        raise SourceError("source_auth_failed", f"no {secret_name} is stored for this source")
    netguard.check_url(base_url)
    return JsonClient(base_url, timeout_s=limits.timeout_s, max_bytes=max_bytes,
                      headers={**(headers or {}), "User-Agent": USER_AGENT})


def seconds_header(headers: Mapping[str, str], name: str) -> float | None:
    """A header holding seconds (``x-ogw-ratelimit-reset``) or, for ``Retry-After``, seconds or an HTTP date
    (RFC 9110 section 10.2.3); None when absent or unreadable."""
    value = next((v for k, v in headers.items() if k.lower() == name.lower()), None)
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None
