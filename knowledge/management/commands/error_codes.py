"""List the registered error codes (core.errors.CODES): ``--markdown`` writes the table docs/api.md holds.

    python manage.py error_codes --markdown            # the table, to paste between the markers in docs/api.md
    python manage.py error_codes --markdown --write    # rewrite that part of docs/api.md in place
"""
from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import translation
from django.utils.functional import Promise

from core.errors import CODES, FAILURES

DOC = Path(settings.BASE_DIR) / "docs" / "api.md"
START, END = "<!-- error-codes:start (manage.py error_codes --markdown --write) -->", "<!-- error-codes:end -->"


def _cell(text: str | Promise) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_table() -> str:
    """One row per code (its status, its class, its message with the named parameters), then a row per variant."""
    rows = ["| code | status | raised as | message |", "|---|---|---|---|"]
    with translation.override("en"):
        for entry in sorted(CODES.values(), key=lambda e: (e.http_status or 999, e.code)):
            status = str(entry.http_status) if entry.http_status is not None else "stored"
            raised = entry.error.__name__ if entry.error is not None else "—"
            rows.append(f"| `{entry.code}` | {status} | {raised} | {_cell(entry.message)} |")
            for name, variant in entry.variants.items():
                rows.append(f"| ↳ `{name}` | | | {_cell(variant)} |")
    return "\n".join(rows) + "\n\n" + document_failures_table()


def document_failures_table() -> str:
    """A document's failure codes (its ``error_code``; the preview answers them as 400), then each budget's sentence."""
    rows = ["Document failure codes (`error_code` of a failed document, from `knowledge/errors.py`):", "",
            "| code | message |", "|---|---|"]
    with translation.override("en"):
        for code, entry in sorted(FAILURES.items()):
            rows.append(f"| `{code}` | {_cell(entry.message)} |")
            rows += [f"| ↳ `{budget}` | {_cell(text)} |" for budget, text in sorted(entry.variants.items())]
    return "\n".join(rows) + "\n"


def documented_table(text: str) -> str | None:
    """The table between the markers of docs/api.md's text, or None when the markers are missing."""
    if START not in text or END not in text:
        return None
    return text.split(START, 1)[1].split(END, 1)[0].strip("\n") + "\n"


class Command(BaseCommand):
    help = "List the registered error codes; --markdown for docs/api.md's table, --write to update it in place."

    def add_arguments(self, parser):
        parser.add_argument("--markdown", action="store_true", help="a Markdown table (else: code, status, message)")
        parser.add_argument("--write", action="store_true", help="with --markdown: replace the table in docs/api.md")

    def handle(self, *args, markdown: bool = False, write: bool = False, **options):
        if not markdown:
            for entry in sorted(CODES.values(), key=lambda e: e.code):
                self.stdout.write(f"{entry.code}\t{entry.http_status or 'stored'}\t{entry.message}")
            return
        table = markdown_table()
        if not write:
            self.stdout.write(table, ending="")
            return
        text = DOC.read_text(encoding="utf-8")
        if documented_table(text) is None:
            raise CommandError(f"{DOC} lacks the markers {START} … {END}")
        head, rest = text.split(START, 1)
        DOC.write_text(head + START + "\n" + table + END + rest.split(END, 1)[1], encoding="utf-8")
        self.stdout.write(f"wrote {len(CODES)} codes to {DOC}")
