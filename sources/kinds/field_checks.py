"""Checks for the settings owners type (used by the Git and S3 kinds' ``clean_settings``).

Each raises ``SourceError("source_settings_invalid")`` naming the field, as sources/kinds/base.py asks.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings as django_settings

from sources.kinds.base import SourceError

MAX_LIST = 200      # paths and extensions an owner may list


def invalid(message: str) -> SourceError:
    return SourceError("source_settings_invalid", message)


def private_allowed() -> bool:
    return bool(getattr(django_settings, "ZHIKU_SOURCES_ALLOW_PRIVATE", False))


def text(settings: Mapping[str, Any], name: str, default: str = "", limit: int = 2000) -> str:
    value = settings.get(name, default)
    if value is None:
        value = default
    if not isinstance(value, str) or len(value) > limit:
        raise invalid(f"{name}: a text of at most {limit} characters")
    return value.strip()


def string_list(settings: Mapping[str, Any], name: str) -> list[str]:
    """A list of texts, or one text of comma-separated parts (as ``manage.py source_add --setting`` passes it)."""
    value = settings.get(name) or []
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or len(value) > MAX_LIST or not all(isinstance(v, str) for v in value):
        raise invalid(f"{name}: a list of at most {MAX_LIST} texts")
    return [v.strip() for v in value if v.strip()]


def extensions(settings: Mapping[str, Any]) -> list[str]:
    """The owner's file extensions (``md`` or ``.md``), lowercased; by default every one the parsers read."""
    given = [e.lower() if e.startswith(".") else "." + e.lower() for e in string_list(settings, "extensions")]
    if given:
        return given
    from knowledge.parsers.base import SUPPORTED_EXTENSIONS
    return sorted(SUPPORTED_EXTENSIONS)


def browse_base(settings: Mapping[str, Any], *, needs: str = "") -> str:
    """An optional ``browse_url`` (where readers open an item), http(s), holding ``needs`` when given."""
    value = text(settings, "browse_url")
    if value and (not value.startswith(("https://", "http://")) or (needs and needs not in value)):
        hint = f" with {needs} in it" if needs else ""
        raise invalid(f"browse_url: an https:// address{hint}")
    return value
