"""When a row (an API token, an assistant's API key) last authenticated a request, written at most once a minute.

A busy client then costs no write per request; the value is right to the minute (``LAST_USED_RESOLUTION``).
"""
from __future__ import annotations

from datetime import datetime, timedelta

from django.db import models
from django.utils import timezone

LAST_USED_RESOLUTION = timedelta(minutes=1)


def touch_last_used(obj: models.Model, *, field: str = "last_used", now: datetime | None = None) -> None:
    """Set ``obj``'s ``field`` to ``now`` (default: the current time), in its row too, unless it is under a minute old.

    One ``UPDATE`` of that column only (no ``save()``: no signals, no other field written), or no query at all.
    """
    now = timezone.now() if now is None else now
    last = getattr(obj, field)
    if last is None or now - last >= LAST_USED_RESOLUTION:
        type(obj)._default_manager.filter(pk=obj.pk).update(**{field: now})
        setattr(obj, field, now)
