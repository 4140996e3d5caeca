"""Settings and item names shared by the service connectors (Feishu, Yuque): the settings every one starts from
(no unknown names, the API's base URL), text fields, and document names that stay unique within one source."""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from sources.kinds.base import SourceError

_NAME_LIMIT = 180


def base_url(settings: Mapping[str, Any], field: str, default: str) -> str:
    """``scheme://host[:port][/path]`` of an API, without a trailing slash, query or fragment."""
    value = settings.get(field) or default
    if not isinstance(value, str) or len(value) > 500:
        raise SourceError("source_settings_invalid", f"{field} must be a URL such as {default}")
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise SourceError("source_settings_invalid", f"{field} must be an http(s) URL such as {default}")
    try:
        _ = parts.port      # reading it raises ValueError for a port that is no number in 0-65535
    except ValueError:
        raise SourceError("source_settings_invalid", f"{field} has an invalid port") from None
    return value.strip().rstrip("/")


def text(settings: Mapping[str, Any], field: str, pattern: str, example: str, *, required: bool = True) -> str:
    """A text setting matching ``pattern`` (a full match), e.g. an id or a namespace."""
    value = settings.get(field, "")
    if value is None or (value == "" and not required):
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not re.fullmatch(pattern, value.strip()):
        raise SourceError("source_settings_invalid", f"{field} is required and looks like {example}")
    return value.strip()


def unknown(settings: Mapping[str, Any], allowed: Iterable[str]) -> None:
    extra = sorted(set(settings) - set(allowed))
    if extra:
        raise SourceError("source_settings_invalid", f"unknown settings: {', '.join(extra)}")


def service_base(settings: Mapping[str, Any], allowed: Iterable[str], default_base_url: str) -> dict[str, Any]:
    """The start of a service kind's ``clean_settings``: no settings but ``allowed``, and the API's ``base_url``."""
    unknown(settings, allowed)
    return {"base_url": base_url(settings, "base_url", default_base_url)}


def _clean_title(title: str, fallback: str) -> str:
    cleaned = "".join(" " if unicodedata.category(c).startswith("C") else c for c in title)
    cleaned = " ".join(cleaned.replace("/", "／").replace("\\", "＼").split())[:_NAME_LIMIT]
    return cleaned or fallback


def item_stems(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """key → document name without its extension: the title, with the key added where two items share a title
    (so a name never depends on which of them came first). ``items`` are (key, title)."""
    pairs = [(key, _clean_title(title, key)) for key, title in items]
    counts = Counter(title.casefold() for _, title in pairs)
    return {key: title if counts[title.casefold()] == 1 else f"{title} ({key})" for key, title in pairs}
