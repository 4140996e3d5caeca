"""The append-only audit log: ``audit.record(action, ...)`` writes an entry (core/audit/recording.py; docs/audit.md)."""
from core.audit.actions import Action, Origin
from core.audit.recording import NOBODY, diff, record, snapshot

__all__ = ["NOBODY", "Action", "Origin", "diff", "record", "snapshot"]
