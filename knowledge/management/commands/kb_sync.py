"""Mirror a folder into a KB: `manage.py kb_sync <kb> <folder>`; running it twice changes nothing."""
from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from knowledge.models import Document, DocumentStatus
from knowledge.services.kbs import kb_create
from knowledge.services.sync import collect_files, kb_sync_files

from ._util import resolve_kb, resolve_owner, wait_for_documents


class Command(BaseCommand):
    help = "Ingest new and changed files of a folder into a KB and remove documents whose files are gone."

    def add_arguments(self, parser):
        parser.add_argument("kb", help="KB id or name (created, owned by --owner, if it does not exist)")
        parser.add_argument("folder")
        parser.add_argument("--owner", help="owner for a new KB (default: the first superuser)")
        parser.add_argument("--keep-missing", action="store_true", help="do not remove documents whose file is gone")
        parser.add_argument("--no-wait", action="store_true", help="return before ingestion finishes")

    def handle(self, *args, **opts):
        kb = resolve_kb(opts["kb"])
        if kb is None:
            if opts["kb"].isdigit():
                raise CommandError(f"No knowledge base with id {opts['kb']}.")
            kb = kb_create(owner=resolve_owner(opts["owner"]), name=opts["kb"])
            self.stdout.write(f"created knowledge base {kb.name!r} (id {kb.pk})")
        files = collect_files(Path(opts["folder"]).resolve())
        report = kb_sync_files(kb=kb, files=files, remove_missing=not opts["keep_missing"])
        if not opts["no_wait"]:
            wait_for_documents(report.document_ids)
        for label in ("added", "updated", "unchanged", "removed"):
            names = getattr(report, label)
            listed = f"  ({', '.join(names[:10])}{' …' if len(names) > 10 else ''})" if names and label != "unchanged" else ""
            self.stdout.write(f"{label}: {len(names)}" + listed)
        for name, why in report.rejected.items():
            self.stderr.write(f"rejected {name}: {why}")
        failed = Document.objects.filter(pk__in=report.document_ids, status=DocumentStatus.FAILED)
        for d in failed:
            self.stderr.write(f"failed {d.source_name}: {d.error_code}: {d.error_message}")
