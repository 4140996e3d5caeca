"""JSON input that cannot crash the server: size and nesting-depth limits, no unstorable characters.

Used by the REST API's default parser (``core.api.parsers.SafeJSONParser``), the SSE chat
endpoint and the chat websocket. The depth is checked on the raw text *before* ``json.loads``
(an iterative scan counting brackets outside strings), so ``[`` × 50,000 is refused without the
recursion that would otherwise raise ``RecursionError``. Parsed strings (keys and values) are then
walked iteratively: NUL (PostgreSQL text and jsonb cannot hold it) and lone surrogates (not
encodable as UTF-8) are refused.
"""
from __future__ import annotations

import json
import re
from typing import Any, NoReturn

from django.conf import settings

from core.errors import CoreError, fail

DEFAULT_MAX_BYTES = 1024 * 1024
DEFAULT_MAX_DEPTH = 32

# A complete JSON string (escapes included), a bracket, or a lone quote (an unterminated string).
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]|"', re.DOTALL)
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def max_bytes() -> int:
    return getattr(settings, "ZHIKU_MAX_JSON_BYTES", DEFAULT_MAX_BYTES)


def max_depth() -> int:
    return getattr(settings, "ZHIKU_MAX_JSON_DEPTH", DEFAULT_MAX_DEPTH)


def check_depth(text: str, limit: int) -> None:
    """Raise ``json_too_deep`` when arrays/objects nest deeper than ``limit``; never recurses."""
    if text.count("[") + text.count("{") <= limit:
        return
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                raise fail(CoreError.JSON_TOO_DEEP, limit=limit)
        elif token in "]}":
            depth -= 1
        elif token == '"':
            return  # an unterminated string: json.loads reports it as invalid JSON


def check_characters(value: Any) -> None:
    """Raise ``invalid_characters`` for a NUL or a lone surrogate in any key or string, iteratively."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            found = _UNSTORABLE.search(item)
            if found:
                variant = None if found.group() == "\x00" else "surrogate"
                if path:
                    raise fail(CoreError.INVALID_CHARACTERS, "nul_in" if variant is None else "surrogate_in", field=path,
                               extra={"field": path})
                raise fail(CoreError.INVALID_CHARACTERS, variant)
        elif isinstance(item, dict):
            for key, inner in item.items():
                child = f"{path}.{key}" if path else str(key)
                if _UNSTORABLE.search(key):
                    stack.append((key, path or "a key"))
                stack.append((inner, child))
        elif isinstance(item, list):
            stack.extend((inner, f"{path}[{i}]") for i, inner in enumerate(item))


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def loads(raw: str | bytes, *, limit_bytes: int | None = None, limit_depth: int | None = None) -> Any:
    """Parse JSON text or UTF-8 bytes with the limits; raises ApplicationError with a stable code.

    Codes: ``body_too_large`` (413), ``invalid_json``, ``json_too_deep``, ``invalid_characters`` (400).
    """
    limit_bytes = max_bytes() if limit_bytes is None else limit_bytes
    limit_depth = max_depth() if limit_depth is None else limit_depth
    size = len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass"))
    if size > limit_bytes:
        raise fail(CoreError.BODY_TOO_LARGE, size=size, limit=limit_bytes)
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise fail(CoreError.INVALID_JSON, "utf8") from None
    else:
        text = raw
    check_depth(text, limit_depth)
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise fail(CoreError.INVALID_JSON, error=exc) from None
    check_characters(value)
    return value


__all__ = ["check_characters", "check_depth", "loads", "max_bytes", "max_depth"]
