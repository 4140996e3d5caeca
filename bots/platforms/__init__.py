"""The chat platforms, one module each (base.py says what one holds): the registry every other part of bots/ reads.

Adding a platform is its module and one line here (``BotKind`` and the kind's database check follow: a migration
from ``makemigrations``). Order is the console's and ``GET /api/bot-kinds/``'s.
"""
from __future__ import annotations

from bots.platforms.base import Platform
from bots.platforms.dingtalk import DingTalk
from bots.platforms.feishu import Feishu
from bots.platforms.wecom import WeCom

PLATFORMS: dict[str, Platform] = {}


def register(platform: Platform) -> Platform:
    """Add ``platform`` under its name (a name at most 10 lowercase letters: ``BotChannel.kind``)."""
    if not (platform.name.isascii() and platform.name.isalpha() and platform.name.islower()
            and len(platform.name) <= 10):
        raise ValueError(f"a platform's name is 1 to 10 lowercase letters, not {platform.name!r}")
    if platform.name in PLATFORMS:
        raise ValueError(f"the platform {platform.name!r} is registered already")
    PLATFORMS[platform.name] = platform
    return platform


def unregister(name: str) -> None:
    PLATFORMS.pop(name, None)


for _platform in (Feishu(), DingTalk(), WeCom()):
    register(_platform)
