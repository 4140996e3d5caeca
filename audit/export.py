"""The audit log as CSV, streamed row by row, safe to open in a spreadsheet.

A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return would be read as a formula
by Excel, LibreOffice and WPS; such cells get a leading apostrophe (OWASP, "CSV Injection",
owasp.org/www-community/attacks/CSV_Injection). The file starts with a UTF-8 byte-order mark so
spreadsheets read the Chinese text as UTF-8.
"""
from __future__ import annotations

import csv
import json
from typing import Iterable, Iterator

from django.utils import timezone
from django.utils.translation import pgettext

from audit.actions import Action
from audit.models import AuditEntry

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
BATCH = 1000


def cell(value) -> str:
    """``value`` as text that no spreadsheet runs as a formula."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


class _Echo:
    def write(self, value: str) -> str:
        return value


def header() -> list[str]:
    names = ("Time", "Who", "Action", "Action code", "Object type", "Object id", "Object", "Knowledge base id",
             "Knowledge base", "Address", "Origin", "Changes")
    return [pgettext("audit log", name) for name in names]


def row(entry: AuditEntry) -> list[str]:
    label = Action(entry.action).label if entry.action in Action.values else entry.action
    return [cell(v) for v in (
        timezone.localtime(entry.at).isoformat(), entry.actor_name, label, entry.action, entry.object_type,
        entry.object_id, entry.object_repr, entry.kb_id, entry.kb_name, entry.address, entry.origin,
        json.dumps(entry.changes, ensure_ascii=False, sort_keys=True) if entry.changes else "")]


def csv_lines(entries: Iterable[AuditEntry]) -> Iterator[str]:
    """The CSV text of ``entries``, one line at a time (a server-side cursor: the whole log is never in memory)."""
    writer = csv.writer(_Echo())
    yield "\ufeff" + writer.writerow(header())
    for entry in entries:
        yield writer.writerow(row(entry))


def entries_stream(qs) -> Iterable[AuditEntry]:
    return qs.iterator(chunk_size=BATCH)
