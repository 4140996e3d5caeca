"""manage.py source_run: run a source to the end in this process and print the run as one JSON line."""
from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from core.errors import ApplicationError
from knowledge.management.commands._util import wait_for_documents
from sources.models import Source, Trigger
from sources.run import execute_run
from sources.services.runs import run_create


def run_line(run) -> str:
    return json.dumps({"id": run.pk, "source": run.source_id, "status": run.status, "added": run.added,
                       "updated": run.updated, "unchanged": run.unchanged, "removed": run.removed,
                       "failed": run.failed, "complete": run.complete, "error_code": run.error_code,
                       "note": run.note, "errors": run.errors}, ensure_ascii=False)


class Command(BaseCommand):
    help = ("Run a source now, in this process, until it ends (and its documents are ingested); print the run as "
            "JSON: id, status, added, updated, unchanged, removed, failed, errors.")

    def add_arguments(self, parser):
        parser.add_argument("source_id", type=int)
        parser.add_argument("--no-wait", action="store_true", help="don't wait for the new versions' ingestion")

    def handle(self, *args, **opts):
        source = Source.objects.filter(pk=opts["source_id"]).first()
        if source is None:
            raise CommandError(f"No source {opts['source_id']}.")
        try:
            run = run_create(source=source, trigger=Trigger.CLI)
        except ApplicationError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from None
        finished = execute_run(run.pk)
        if finished is None:  # cancelled before it started
            run.refresh_from_db()
            finished = run
        if not opts["no_wait"]:
            wait_for_documents(list(source.items.exclude(document=None).values_list("document_id", flat=True)))
        self.stdout.write(run_line(finished))
