"""manage.py audit_purge: delete the audit entries older than ZHIKU_AUDIT_RETENTION_DAYS (audit/purge.py)."""
from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from audit.purge import audit_purge, retention_cutoff


class Command(BaseCommand):
    help = "Delete audit entries older than ZHIKU_AUDIT_RETENTION_DAYS (the database refuses younger ones)."

    def handle(self, *args, **options) -> None:
        cutoff = retention_cutoff()
        deleted = audit_purge()
        self.stdout.write(f"audit_purge: deleted {deleted} entries written before {cutoff.isoformat()} "
                          f"(retention {settings.ZHIKU_AUDIT_RETENTION_DAYS} days)")
