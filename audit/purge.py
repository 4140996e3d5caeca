"""The retention purge: the one way audit entries leave the database, once older than ZHIKU_AUDIT_RETENTION_DAYS.

The table's DELETE trigger (``audit/migrations/0002_append_only.py``) lets a row go only when the
transaction has set ``zhiku.audit_purge_before`` and the row is older than both that time and the
database's own hard minimum (``HARD_MINIMUM_DAYS`` before ``now()``), so no setting and no code path can
remove a recent entry. The purge records itself as an ``audit.purge`` entry. ``purge_if_due`` is what the
ingestion sweeper calls on each round (``knowledge/ingestion/recovery.py``): at most once a day per process.
"""
from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from core.audit.actions import Action
from core.audit.recording import record

logger = logging.getLogger(__name__)

# The database's own floor, written into the trigger: entries younger than this are never deleted.
HARD_MINIMUM_DAYS = 30
PURGE_EVERY_SECONDS = 24 * 3600
_last_purge = {"at": 0.0}
_lock = threading.Lock()


def retention_cutoff(now: datetime | None = None) -> datetime:
    """Entries written before this instant are past retention."""
    days = max(int(settings.ZHIKU_AUDIT_RETENTION_DAYS), HARD_MINIMUM_DAYS)
    return (now or timezone.now()) - timedelta(days=days)


def audit_purge(*, now: datetime | None = None) -> int:
    """Delete the entries older than the retention period; how many went. Records an ``audit.purge`` entry."""
    cutoff = retention_cutoff(now)
    with transaction.atomic():
        with connection.cursor() as cursor:
            # Transaction-local, and cleared again at once: inside an outer transaction the permission
            # would otherwise last until that one ends.
            cursor.execute("SELECT set_config('zhiku.audit_purge_before', %s, true)", [cutoff.isoformat()])
            try:
                # The database's floor repeated, so a clock a little ahead of the server's never asks for a refused row.
                cursor.execute("DELETE FROM audit_auditentry WHERE at < %s AND at < now() - interval '30 days'", [cutoff])
                deleted = cursor.rowcount
            finally:
                cursor.execute("SELECT set_config('zhiku.audit_purge_before', '', true)")
        if deleted:
            record(Action.AUDIT_PURGE, changes={"deleted": deleted, "before": cutoff,
                                                "retention_days": settings.ZHIKU_AUDIT_RETENTION_DAYS})
    return deleted


def purge_if_due() -> int:
    """``audit_purge`` when this process has not run it for a day (the sweeper's rounds call this)."""
    with _lock:
        if time.monotonic() - _last_purge["at"] < PURGE_EVERY_SECONDS and _last_purge["at"]:
            return 0
        _last_purge["at"] = time.monotonic()
    deleted = audit_purge()
    if deleted:
        logger.info("audit: purged %s entries past retention", deleted)
    return deleted
