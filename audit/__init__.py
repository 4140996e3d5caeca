"""The append-only audit log: ``audit.record(action, ...)`` writes an entry (audit/recording.py; docs/audit.md)."""
from audit.actions import Action, Origin
from audit.recording import NOBODY, diff, record, snapshot

__all__ = ["NOBODY", "Action", "Origin", "diff", "record", "snapshot"]
