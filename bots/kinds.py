"""What each kind of channel needs: its settings (not secret) and credentials (stored encrypted), and their checks.

The names follow each platform's own console: Feishu's 凭证与基础信息 (App ID, App Secret) and 事件与回调 (Verification
Token, Encrypt Key); DingTalk's robot (AppSecret signs its HTTP callbacks); WeCom's 企业 ID, the app's AgentId and
Secret, and its 接收消息 API (Token, EncodingAESKey). docs/integrations.md shows where each is found.
"""
from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from core.errors import fail

MAX_VALUE = 512


@dataclass(frozen=True)
class Field:
    name: str
    required: bool = True
    help: str | Promise = ""


@dataclass(frozen=True)
class Kind:
    settings: tuple[Field, ...]
    credentials: tuple[Field, ...]


KINDS: dict[str, Kind] = {
    "feishu": Kind(
        settings=(Field("app_id", help=_("Credentials & Basic Info → App ID (cli_…)")),
                  Field("bot_open_id", required=False,
                        help=_("The bot's open_id: in groups, answer only when it is the one mentioned (blank: any mention)"))),
        credentials=(Field("app_secret", help=_("Credentials & Basic Info → App Secret")),
                     Field("verification_token", help=_("Events & Callbacks → Encryption Strategy → Verification Token")),
                     Field("encrypt_key", required=False,
                           help=_("Events & Callbacks → Encryption Strategy → Encrypt Key (blank: events unencrypted)"))),
    ),
    "dingtalk": Kind(
        settings=(Field("robot_code", required=False, help=_("The robot's RobotCode (AppKey), for reference")),),
        credentials=(Field("app_secret", help=_("Credentials → AppSecret: signs each callback")),),
    ),
    "wecom": Kind(
        settings=(Field("corp_id", help=_("My Company → Company ID (ww…)")),
                  Field("agent_id", help=_("App Management → the app's AgentId")),
                  Field("msg_format", required=False, help=_("markdown (default) or text"))),
        credentials=(Field("secret", help=_("App Management → the app's Secret")),
                     Field("token", help=_("Receive Messages → Set API Reception → Token")),
                     Field("encoding_aes_key", help=_("Receive Messages → Set API Reception → EncodingAESKey (43 characters)"))),
    ),
}

_RULES = {
    "app_id": (re.compile(r"^[A-Za-z0-9_-]{1,64}$"), "letters, digits, _ and -"),
    "corp_id": (re.compile(r"^[A-Za-z0-9_-]{1,64}$"), "letters, digits, _ and -"),
    "agent_id": (re.compile(r"^[0-9]{1,12}$"), "a whole number"),
    "msg_format": (re.compile(r"^(markdown|text)$"), "markdown or text"),
    "token": (re.compile(r"^[A-Za-z0-9]{1,64}$"), "letters and digits"),
}


def kind_of(kind: Any) -> Kind:
    if not isinstance(kind, str) or kind not in KINDS:
        raise fail("bot_channel_invalid", "kind", on_field="kind")
    return KINDS[kind]


def _names(fields: tuple[Field, ...]) -> str:
    return ", ".join(f.name for f in fields)


def _values(values: Any, fields: tuple[Field, ...], variant: str) -> dict[str, str]:
    names = {f.name for f in fields}
    if not isinstance(values, Mapping) or any(
            not isinstance(k, str) or k not in names or not isinstance(v, str) or len(v) > MAX_VALUE
            for k, v in values.items()):
        raise fail("bot_channel_invalid", variant, names=_names(fields) or "-", on_field=variant)
    return {k: v.strip() for k, v in values.items()}


def _check(name: str, value: str) -> None:
    rule = _RULES.get(name)
    if rule is not None and value and not rule[0].match(value):
        raise fail("bot_channel_invalid", "value", field=name, rule=rule[1], on_field=name)
    if name == "encoding_aes_key" and value:
        try:
            ok = len(value) == 43 and len(base64.b64decode(value + "=", validate=True)) == 32
        except (binascii.Error, ValueError):
            ok = False
        if not ok:
            raise fail("bot_channel_invalid", "value", field=name, rule="43 characters of base64", on_field=name)


def clean_settings(kind: Kind, values: Any) -> dict[str, str]:
    clean = {k: v for k, v in _values(values, kind.settings, "settings").items() if v}
    for name, value in clean.items():
        _check(name, value)
    return clean


def clean_credentials(kind: Kind, values: Any) -> dict[str, str]:
    """The credentials given ("" kept: on a change it removes that secret)."""
    clean = _values(values, kind.credentials, "credentials")
    for name, value in clean.items():
        _check(name, value)
    return clean


def require(kind_name: str, settings: Mapping[str, str], credentials: Mapping[str, str]) -> None:
    """Every required setting and credential is there (``missing`` names those that are not)."""
    kind = KINDS[kind_name]
    missing = [f.name for f in kind.settings if f.required and not settings.get(f.name)]
    missing += [f.name for f in kind.credentials if f.required and not credentials.get(f.name)]
    if missing:
        raise fail("bot_channel_invalid", "missing", kind=kind_name, names=", ".join(missing))


def describe() -> list[dict[str, Any]]:
    """The kinds and their fields, for a form (``GET /api/bot-kinds/``)."""
    def fields(items: tuple[Field, ...]) -> list[dict[str, Any]]:
        return [{"name": f.name, "required": f.required, "help": str(f.help)} for f in items]
    return [{"kind": name, "settings": fields(k.settings), "credentials": fields(k.credentials)} for name, k in KINDS.items()]
