"""What the sweeper does and how often: crash recovery of ingestion, and the audit log's retention.

Imported by config/settings.py (``from config.recovery import *``).
"""
from __future__ import annotations

import os

from core.env import env_int

# Crash recovery: a processing document's heartbeat is written every HEARTBEAT seconds; one silent
# for STALL seconds (its worker died) is re-queued by the sweeper, which runs every SWEEP seconds in
# each Celery worker (and in the web process in thread mode); after MAX_ATTEMPTS claims it fails
# with ingest_crashed. A pending document untouched for PENDING_REQUEUE seconds is queued again.
ZHIKU_INGEST_HEARTBEAT_SECONDS = float(os.environ.get("ZHIKU_INGEST_HEARTBEAT_SECONDS", "10"))
ZHIKU_INGEST_STALL_SECONDS = float(os.environ.get("ZHIKU_INGEST_STALL_SECONDS", "60"))
ZHIKU_SWEEP_SECONDS = float(os.environ.get("ZHIKU_SWEEP_SECONDS", "30"))
# Audit entries are kept this many days, then purged; at least 30, the database's own floor (docs/audit.md).
ZHIKU_AUDIT_RETENTION_DAYS = env_int("ZHIKU_AUDIT_RETENTION_DAYS", 365)
ZHIKU_INGEST_MAX_ATTEMPTS = env_int("ZHIKU_INGEST_MAX_ATTEMPTS", 3)
ZHIKU_PENDING_REQUEUE_SECONDS = float(os.environ.get("ZHIKU_PENDING_REQUEUE_SECONDS", "600"))
