"""``manage.py kb_key_create --owner USERNAME --kb KB_NAME``: a read-only retrieval key of a KB the user owns.

Prints one JSON line ``{"kb_id": ..., "key": "..."}`` (MCP search, Dify's external knowledge: docs/integrations.md).
"""
from __future__ import annotations

import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from assistants.management.commands.assistant_create import kb_ids_named
from assistants.services import kb_key_create
from core.errors import ApplicationError


class Command(BaseCommand):
    help = "Issue a retrieval key of a KB and print its id and the key as JSON."

    def add_arguments(self, parser):
        parser.add_argument("--owner", required=True)
        parser.add_argument("--kb", required=True, help="the KB's name")
        parser.add_argument("--key-name", default="manage.py")

    def handle(self, *args, **opts):
        owner = get_user_model().objects.filter(username=opts["owner"]).first()
        if owner is None:
            raise CommandError(f"no user {opts['owner']!r}")
        try:
            kb_id = kb_ids_named([opts["kb"]], owner)[0]
            row, key = kb_key_create(user=owner, kb_id=kb_id, name=opts["key_name"])
        except ApplicationError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from None
        self.stdout.write(json.dumps({"kb_id": row.kb_id, "key": key}))
