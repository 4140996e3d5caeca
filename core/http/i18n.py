"""The language of a request that Django's LocaleMiddleware does not see: ASGI scopes (websockets, early rejections).

Same order as the middleware: the language switch's cookie, then Accept-Language, then LANGUAGE_CODE (zh-hans).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from http.cookies import SimpleCookie
from typing import Any

from django.conf import settings
from django.utils.translation import get_supported_language_variant
from django.utils.translation.trans_real import parse_accept_lang_header


def _header(scope: Mapping[str, Any], name: bytes) -> str:
    headers: Iterable[tuple[bytes, bytes]] = scope.get("headers") or []
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return ""


def _supported(code: str) -> str | None:
    try:
        return get_supported_language_variant(code)
    except LookupError:
        return None


def language_from_scope(scope: Mapping[str, Any]) -> str:
    """The language code for an ASGI scope's messages."""
    cookie = _header(scope, b"cookie")
    if cookie:
        try:
            morsel = SimpleCookie(cookie).get(settings.LANGUAGE_COOKIE_NAME)
        except Exception:  # noqa: BLE001 - a malformed Cookie header is no language
            morsel = None
        if morsel is not None and (code := _supported(morsel.value)):
            return code
    accept = _header(scope, b"accept-language")
    if accept and len(accept) <= 1000:
        for code, _quality in parse_accept_lang_header(accept):
            if code == "*":
                break
            if found := _supported(code):
                return found
    return settings.LANGUAGE_CODE
