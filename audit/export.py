"""The audit log as CSV, streamed row by row, safe to open in a spreadsheet.

A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return would be read as a formula
by Excel, LibreOffice and WPS; such cells get a leading apostrophe (OWASP, "CSV Injection",
owasp.org/www-community/attacks/CSV_Injection). The file starts with a UTF-8 byte-order mark so
spreadsheets read the Chinese text as UTF-8.
"""
from __future__ import annotations

import csv
import json
from collections.abc import AsyncIterator

from asgiref.sync import sync_to_async
from django.db.models import Q
from django.utils import timezone, translation
from django.utils.translation import pgettext

from audit.models import AuditEntry
from core.audit.actions import Action

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
    # The zone the times are written in, named in the first column's title (docs/i18n.md, "Times"); each time carries
    # its UTC offset too.
    return [pgettext("audit log", name) + (f" ({timezone.get_current_timezone_name()})" if name == "Time" else "")
            for name in names]


def row(entry: AuditEntry) -> list[str]:
    label = Action(entry.action).label if entry.action in Action.values else entry.action
    return [cell(v) for v in (
        timezone.localtime(entry.at).isoformat(), entry.actor_name, label, entry.action, entry.object_type,
        entry.object_id, entry.object_repr, entry.kb_id, entry.kb_name, entry.address, entry.origin,
        json.dumps(entry.changes, ensure_ascii=False, sort_keys=True) if entry.changes else "")]


def _batch(qs, after: tuple | None) -> list[AuditEntry]:
    """The next ``BATCH`` entries of ``qs`` (newest first) after the entry ``after`` = (at, id) (keyset paging)."""
    if after is not None:
        qs = qs.filter(Q(at__lt=after[0]) | Q(at=after[0], id__lt=after[1]))
    return list(qs.order_by("-at", "-id")[:BATCH])


async def csv_stream(qs, language: str | None) -> AsyncIterator[str]:
    """The CSV text of ``qs``, a batch of rows at a time, in ``language`` (it runs after the middleware).

    An async iterator, so daphne sends it as it is written rather than collecting it first; the log is
    never in memory whole.
    """
    writer = csv.writer(_Echo())
    with translation.override(language):
        yield "\ufeff" + writer.writerow(header())
        after = None
        while True:
            batch = await sync_to_async(_batch)(qs, after)
            for entry in batch:
                yield writer.writerow(row(entry))
            if len(batch) < BATCH:
                return
            after = (batch[-1].at, batch[-1].pk)
