"""The kinds this installation offers: every connector module under sources/kinds/, imported once, and its form.

A kind whose optional library is missing (boto3 for s3, say) is left out rather than failing the page.
"""
from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from django.conf import settings

from sources.kinds.base import REGISTRY, SettingField

logger = logging.getLogger(__name__)

_NOT_KINDS = {"__init__", "base", "netguard"}


@dataclass(frozen=True)
class KindInfo:
    kind: str
    fields: tuple[SettingField, ...]      # the settings' form; () for a JSON box
    secret_fields: tuple[str, ...]

    @property
    def settings_fields(self) -> tuple[SettingField, ...]:
        return tuple(f for f in self.fields if f.type != "secret" and f.name not in self.secret_fields)


@lru_cache(maxsize=1)
def load_kinds() -> None:
    """Import every kind module (sources/kinds/*.py and ``ZHIKU_SOURCE_KIND_MODULES``): each registers its kind."""
    modules = [f"sources.kinds.{p.stem}" for p in sorted((Path(__file__).parent / "kinds").glob("*.py"))
               if p.stem not in _NOT_KINDS and not p.stem.endswith("_errors")]
    for module in [*modules, *settings.ZHIKU_SOURCE_KIND_MODULES]:
        try:
            importlib.import_module(module)
        except ImportError:
            logger.warning("source kind module %s cannot be imported; its kind is not offered", module, exc_info=True)


# The console offers these first, most used first; a site's own kinds follow by name.
_FIRST = ("web", "git", "s3", "feishu", "yuque")


def kinds() -> list[KindInfo]:
    """Every registered kind: the platform's own in ``_FIRST`` order, then the rest by name."""
    load_kinds()
    return [KindInfo(kind=k, fields=tuple(getattr(cls, "fields", ()) or ()),
                     secret_fields=tuple(getattr(cls, "secret_fields", ()) or ()))
            for k, cls in sorted(REGISTRY.items(), key=lambda kv: (_FIRST.index(kv[0]) if kv[0] in _FIRST else len(_FIRST), kv[0]))]
