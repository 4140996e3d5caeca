"""manage.py source_add: add a source to a KB and print {"id": ...}."""
from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from core.errors import ApplicationError
from knowledge.access import has_role
from knowledge.management.commands._util import named_user, resolve_kb
from knowledge.models import Role
from sources.services.sources import source_create


def _pairs(values: list[str], what: str, *, parse_json: bool) -> dict:
    """``key=value`` options as a dict; with ``parse_json`` a value that reads as JSON (a number, a list) is that."""
    out = {}
    for raw in values or []:
        key, sep, value = raw.partition("=")
        if not sep or not key.strip():
            raise CommandError(f"--{what} takes key=value, not {raw!r}")
        if parse_json:
            try:
                value = json.loads(value)
            except ValueError:
                pass
        out[key.strip()] = value
    return out


class Command(BaseCommand):
    help = "Add a source to a knowledge base (its settings are checked by its kind) and print {\"id\": ...}."

    def add_arguments(self, parser):
        parser.add_argument("--kb", required=True, help="the knowledge base's name or id")
        parser.add_argument("--owner", required=True, help="username of an owner or editor of the KB; the source's creator")
        parser.add_argument("--kind", required=True, help="web, git, s3, feishu, yuque, ...")
        parser.add_argument("--name", help="the source's name in the KB (default: the URL, else the kind)")
        parser.add_argument("--url", help="web: the start URL (settings url)")
        parser.add_argument("--max-pages", type=int, help="web: the page limit (settings max_pages)")
        parser.add_argument("--setting", action="append", metavar="KEY=VALUE",
                            help="a setting of the kind (repeatable; a JSON value such as 3 or [\"docs/\"] is read as JSON)")
        parser.add_argument("--credential", action="append", metavar="KEY=VALUE",
                            help="a credential of the kind (repeatable; stored encrypted)")
        parser.add_argument("--schedule", default="manual", choices=["manual", "hourly", "daily", "cron"])
        parser.add_argument("--cron", default="", help="with --schedule cron: five fields, e.g. \"0 3 * * *\"")

    def handle(self, *args, **opts):
        kb = resolve_kb(opts["kb"])
        if kb is None:
            raise CommandError(f"No knowledge base {opts['kb']!r}.")
        user = named_user(opts["owner"])
        if not has_role(user=user, kb=kb, min_role=Role.EDITOR):
            raise CommandError(f"{user.username} is not an owner or editor of {kb.name!r}.")
        settings = _pairs(opts["setting"], "setting", parse_json=True)
        if opts["url"] is not None:
            settings["url"] = opts["url"]
        if opts["max_pages"] is not None:
            settings["max_pages"] = opts["max_pages"]
        try:
            source = source_create(kb=kb, user=user, kind=opts["kind"], name=opts["name"] or opts["url"] or opts["kind"],
                                   settings=settings, credentials=_pairs(opts["credential"], "credential", parse_json=False),
                                   schedule=opts["schedule"], cron=opts["cron"])
        except ApplicationError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from None
        self.stdout.write(json.dumps({"id": source.pk}))
