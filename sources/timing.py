"""When a source runs next: hourly, daily, or at the times a cron expression names (croniter)."""
from __future__ import annotations

from datetime import datetime, timedelta

from croniter import croniter
from django.utils import timezone

from sources.models import Schedule, Source


def cron_check(expression: str) -> bool:
    """Whether ``expression`` is a five-field cron expression (minute hour day month weekday) croniter reads."""
    return len(expression.split()) == 5 and croniter.is_valid(expression)


def next_run_at(source: Source, now: datetime | None = None) -> datetime | None:
    """When ``source`` runs next: None for manual and paused sources; cron times in the site's TIME_ZONE."""
    if source.paused or source.schedule == Schedule.MANUAL:
        return None
    now = now or timezone.now()
    if source.schedule == Schedule.HOURLY:
        return now + timedelta(hours=1)
    if source.schedule == Schedule.DAILY:
        return now + timedelta(days=1)
    return croniter(source.cron, timezone.localtime(now)).get_next(datetime)
