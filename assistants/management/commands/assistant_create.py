"""``manage.py assistant_create --owner USERNAME --kb KB_NAME [--kb ...] --name NAME``: an assistant and a new key.

Prints one JSON line ``{"id": ..., "key": "..."}``. An assistant of that name the owner already has is reused
(its KBs set to the ones given) and given one more key, so the command can run again in a set-up script.
"""
from __future__ import annotations

import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from assistants.models import Assistant
from assistants.services import assistant_create, assistant_key_create, assistant_update
from core.errors import ApplicationError
from knowledge.models import KnowledgeBase


def kb_ids_named(names: list[str], owner) -> list[int]:
    ids = []
    for name in names:
        found = list(KnowledgeBase.objects.filter(name=name).order_by("id").values_list("id", flat=True))
        if not found:
            raise CommandError(f"no knowledge base named {name!r}")
        own = list(KnowledgeBase.objects.filter(name=name, owner=owner).values_list("id", flat=True))
        ids.append((own or found)[0])
    return ids


class Command(BaseCommand):
    help = "Create (or reuse) an assistant over the named KBs and print its id and a new key as JSON."

    def add_arguments(self, parser):
        parser.add_argument("--owner", required=True)
        parser.add_argument("--kb", action="append", required=True, help="a KB name; repeat for several")
        parser.add_argument("--name", required=True)
        parser.add_argument("--key-name", default="manage.py")

    def handle(self, *args, **opts):
        owner = get_user_model().objects.filter(username=opts["owner"]).first()
        if owner is None:
            raise CommandError(f"no user {opts['owner']!r}")
        try:
            ids = kb_ids_named(opts["kb"], owner)
            assistant = Assistant.objects.filter(owner=owner, name=opts["name"]).first()
            if assistant is None:
                assistant = assistant_create(owner=owner, name=opts["name"], kb_ids=ids)
            else:
                assistant = assistant_update(assistant=assistant, user=owner, kb_ids=ids)
            _, key = assistant_key_create(user=owner, assistant=assistant, name=opts["key_name"])
        except ApplicationError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from None
        self.stdout.write(json.dumps({"id": assistant.pk, "key": key}))
