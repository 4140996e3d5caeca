"""What each kind of channel needs, checked: its settings (not secret) and credentials (stored encrypted).

The fields are each platform's (``Platform.settings``, ``Platform.credentials`` in bots/platforms/), named after the
platform's own console; docs/integrations.md shows where each is found.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bots.errors import BotsError
from bots.platforms import PLATFORMS
from bots.platforms.base import Field, Platform
from core.errors import fail

MAX_VALUE = 512


def kind_of(kind: Any) -> Platform:
    if not isinstance(kind, str) or kind not in PLATFORMS:
        raise fail(BotsError.BOT_CHANNEL_INVALID, "kind", on_field="kind")
    return PLATFORMS[kind]


def _names(fields: tuple[Field, ...]) -> str:
    return ", ".join(f.name for f in fields)


def _values(values: Any, fields: tuple[Field, ...], variant: str) -> dict[str, str]:
    names = {f.name for f in fields}
    if not isinstance(values, Mapping) or any(
            not isinstance(k, str) or k not in names or not isinstance(v, str) or len(v) > MAX_VALUE
            for k, v in values.items()):
        raise fail(BotsError.BOT_CHANNEL_INVALID, variant, names=_names(fields) or "-", on_field=variant)
    return {k: v.strip() for k, v in values.items()}


def _checked(values: dict[str, str], fields: tuple[Field, ...]) -> dict[str, str]:
    by_name = {f.name: f for f in fields}
    for name, value in values.items():
        field = by_name[name]
        if value and field.valid is not None and not field.valid(value):
            raise fail(BotsError.BOT_CHANNEL_INVALID, "value", field=name, rule=field.rule, on_field=name)
    return values


def clean_settings(kind: Platform, values: Any) -> dict[str, str]:
    return _checked({k: v for k, v in _values(values, kind.settings, "settings").items() if v}, kind.settings)


def clean_credentials(kind: Platform, values: Any) -> dict[str, str]:
    """The credentials given ("" kept: on a change it removes that secret)."""
    return _checked(_values(values, kind.credentials, "credentials"), kind.credentials)


def require(kind_name: str, settings: Mapping[str, str], credentials: Mapping[str, str]) -> None:
    """Every required setting and credential is there (``missing`` names those that are not)."""
    kind = PLATFORMS[kind_name]
    missing = [f.name for f in kind.settings if f.required and not settings.get(f.name)]
    missing += [f.name for f in kind.credentials if f.required and not credentials.get(f.name)]
    if missing:
        raise fail(BotsError.BOT_CHANNEL_INVALID, "missing", kind=kind_name, names=", ".join(missing))


def describe() -> list[dict[str, Any]]:
    """The kinds and their fields, for a form (``GET /api/bot-kinds/``)."""
    def fields(items: tuple[Field, ...]) -> list[dict[str, Any]]:
        return [{"name": f.name, "required": f.required, "help": str(f.help)} for f in items]
    return [{"kind": name, "settings": fields(k.settings), "credentials": fields(k.credentials)}
            for name, k in PLATFORMS.items()]
