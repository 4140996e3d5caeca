"""The bots' calls to the platforms' APIs, through the one outbound client (core/net/): each URL parsed once,
its host resolved once and checked (``core.net.netguard.target``), the connection made to that address
(``core.net.pinned``); no redirects, a timeout and a byte cap on every answer. Access tokens are cached (Django's
cache) until shortly before they expire; a cache that cannot be reached only costs a new token.
"""
from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import requests
from django.conf import settings
from django.core.cache import cache

from core.net import netguard
from core.net.errors import OutboundError
from core.net.pinned import pinned_session

logger = logging.getLogger(__name__)

MAX_ANSWER_BYTES = 1024 * 1024
USER_AGENT = "zhiku-bots/1.0"


class ReplyError(Exception):
    """A platform refused or could not be reached; ``detail`` is for the channel's event log."""

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail


def call(method: str, url: str, *, params: Mapping[str, str] | None = None, body: Any = None,
         headers: Mapping[str, str] | None = None) -> tuple[int, Any]:
    """(HTTP status, decoded JSON answer or None) of one request to ``url``."""
    try:
        checked = netguard.target(url)
    except OutboundError as exc:
        raise ReplyError(f"{exc.code}: {exc.message}") from None
    session, adapter = pinned_session()
    adapter.pin(checked)
    sent = {"User-Agent": USER_AGENT, "Host": checked.netloc, **(headers or {})}
    data = json.dumps(body, ensure_ascii=False).encode() if body is not None else None
    if data is not None:
        sent["Content-Type"] = "application/json; charset=utf-8"
    try:
        with session, session.request(method, url, params=params, data=data, headers=sent, stream=True,
                                      timeout=settings.ZHIKU_BOTS_TIMEOUT_SECONDS, allow_redirects=False) as response:
            raw = response.raw.read(MAX_ANSWER_BYTES + 1, decode_content=True)
            status = response.status_code
    except requests.RequestException as exc:
        raise ReplyError(f"{checked.host} could not be reached: {exc}") from None
    if len(raw) > MAX_ANSWER_BYTES:
        raise ReplyError(f"{checked.host} answered more than {MAX_ANSWER_BYTES} bytes")
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, None


def _cache_key(kind: str, *parts: str) -> str:
    return f"bots:token:{kind}:" + hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def _cached(key: str) -> str | None:
    try:
        value = cache.get(key)
    except Exception:  # an unreachable cache (Redis) steps aside: a new token is fetched
        logger.warning("bot token cache unreachable", exc_info=True)
        return None
    if isinstance(value, dict) and value.get("until", 0) > time.time():
        return str(value.get("token") or "") or None
    return None


def _keep(key: str, token: str, expires_in: Any) -> None:
    try:
        seconds = max(1.0, float(expires_in))
    except (TypeError, ValueError):
        seconds = 600.0
    until = time.time() + seconds - min(300.0, seconds / 4)  # renewed shortly before the platform's expiry
    try:
        cache.set(key, {"token": token, "until": until}, timeout=int(seconds) + 1)
    except Exception:
        logger.warning("bot token cache unreachable", exc_info=True)


def _forget(key: str) -> None:
    try:
        cache.delete(key)
    except Exception:
        logger.warning("bot token cache unreachable", exc_info=True)


def with_token(kind: str, identity: tuple[str, ...], fetch: Callable[[], tuple[str, Any]],
               use: Callable[[str], tuple[bool, Any]]) -> Any:
    """``use(token)`` with a cached token; when ``use`` says the token was refused (expired or invalid), once more
    with a new one. ``fetch`` returns (token, seconds it lives)."""
    key = _cache_key(kind, *identity)
    token = _cached(key)
    for attempt in range(2):
        if token is None:
            token, expires_in = fetch()
            _keep(key, token, expires_in)
        refused, result = use(token)
        if not refused:
            return result
        _forget(key)
        token = None
        if attempt == 1:
            raise ReplyError(f"the {kind} access token was refused twice")
    raise AssertionError("unreachable")
