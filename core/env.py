"""Reading settings from the environment: a flag, a whole number (the default when unset or empty)."""
from __future__ import annotations

import os


def env_bool(name: str, default: bool) -> bool:
    """1, true, yes or on (any case) is true; anything else set is false."""
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return default if value in (None, "") else int(value)

