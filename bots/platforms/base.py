"""What a chat platform is to the rest of bots/: its fields, its callback check, its reply and its self-test.

Each platform is one module of bots/platforms/ holding a ``Platform`` (feishu.py, dingtalk.py, wecom.py), listed once
in the registry (bots/platforms/__init__.py); the callback view, the reply job, the channels' field checks, the
self-test and ``BotKind`` all read the registry. A platform knows nothing of the models: it is given the channel as
``Channel`` (what it reads of one) and, in ``Callback``, what it may need from the database.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from django.http import HttpRequest
from django.test import RequestFactory
from django.utils.functional import Promise

from bots.formatting import Reply
from bots.protocol import Outcome


@dataclass(frozen=True)
class Field:
    """A setting (not secret) or a credential (stored encrypted) of a kind of channel; ``valid`` checks a non-empty
    value, ``rule`` says what it must look like (in ``bot_channel_invalid``'s message)."""

    name: str
    required: bool = True
    help: str | Promise = ""
    valid: Callable[[str], object] | None = None
    rule: str = ""


class Channel(Protocol):
    """What a platform reads of its channel (``bots.models.BotChannel``)."""

    @property
    def pk(self) -> Any: ...
    @property
    def settings(self) -> Any: ...
    @property
    def updated_at(self) -> datetime: ...
    @property
    def assistant(self) -> Any: ...


@dataclass(frozen=True)
class Callback:
    """One request to a channel's callback URL (bots/callback.py), with what a platform may need to check it.

    ``signature_once(timestamp, body, window)``: whether the channel may take a signature of ``timestamp`` with
    ``body`` (the first time, or again with the same body), remembered ``window`` seconds
    (``bots.services.signature_once``): for a platform whose signature does not cover the body (DingTalk).
    """

    channel: Channel
    credentials: dict[str, str]
    request: HttpRequest
    limit: int
    signature_once: Callable[[int, bytes, int], bool]


class Platform(ABC):
    """A chat platform: ``name`` is the channel's stored kind and its callback URL's (``/bots/<name>/<id>/``)."""

    name: str
    label: str | Promise
    settings: tuple[Field, ...]
    credentials: tuple[Field, ...]
    token_api: str
    """The API that issues an access token, as the platform's documentation names it (the self-test's words)."""
    token_names: str
    """The credentials that API checks, as the platform's console names them."""

    @abstractmethod
    def receive(self, callback: Callback) -> Outcome:
        """Check the callback (every failure ``bots.protocol.refused``) and say what to answer and what to store."""

    @abstractmethod
    def send(self, channel: Channel, credentials: dict[str, str], reply_to: dict[str, Any], reply: Reply) -> None:
        """Send ``reply`` where ``reply_to`` (the stored ``Incoming.reply_to``) says; ``ReplyError`` when refused."""

    @abstractmethod
    def access_token(self, channel: Channel, credentials: dict[str, str]) -> tuple[str, Any]:
        """(token, seconds it lives) from the platform's API; ``ReplyError`` with the platform's own answer."""

    def token_checkable(self, channel: Channel) -> bool:
        """Whether the self-test can ask ``access_token`` (the settings it needs are there)."""
        return True

    @abstractmethod
    def sample(self, factory: RequestFactory, path: str, channel: Channel, credentials: dict[str, str],
               expected: str) -> HttpRequest:
        """The self-test's sample event to ``path``, signed with the stored credentials as the platform would sign
        it; an answer that echoes ``expected`` (when the platform's check does) shows it went through."""

    def answered(self, text: str, expected: str) -> bool:
        """Whether the callback's answer to ``sample`` is the one the platform expects."""
        return text == expected

    @abstractmethod
    def signed_with(self, credentials: dict[str, str]) -> str:
        """The secrets the sample was signed with, as the platform's console names them."""

    @abstractmethod
    def unverified(self, channel: Channel, credentials: dict[str, str], token_checked: bool) -> list[str]:
        """What the self-test cannot verify, each with how it can be."""
