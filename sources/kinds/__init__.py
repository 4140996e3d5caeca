"""One module per kind of source, each a :class:`sources.kinds.base.Connector` registered by its ``kind``."""
from __future__ import annotations

from sources.kinds.base import REGISTRY, Connector, connector_for, register

__all__ = ["Connector", "REGISTRY", "connector_for", "register"]
