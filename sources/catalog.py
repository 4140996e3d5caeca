"""The kinds this installation offers: every connector module under sources/kinds/, imported once, and its form.

A kind whose optional library is missing (boto3 for s3, say) is left out rather than failing the page.
"""
from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

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
def _import_kinds() -> None:
    for path in sorted((Path(__file__).parent / "kinds").glob("*.py")):
        if path.stem in _NOT_KINDS or path.stem.endswith("_errors"):
            continue
        try:
            importlib.import_module(f"sources.kinds.{path.stem}")
        except ImportError:
            logger.warning("source kind module %s cannot be imported; its kind is not offered", path.stem, exc_info=True)


def kinds() -> list[KindInfo]:
    """Every registered kind, by name."""
    _import_kinds()
    return [KindInfo(kind=k, fields=tuple(getattr(cls, "fields", ()) or ()),
                     secret_fields=tuple(getattr(cls, "secret_fields", ()) or ()))
            for k, cls in sorted(REGISTRY.items())]
