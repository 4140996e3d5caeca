"""The append-only audit log: its table, the pages and API that read it, its export and retention (docs/audit.md).

Entries are written by ``core.audit.record``.
"""
