"""``manage.py channel_create --assistant ID --kind feishu|dingtalk|wecom [--name NAME] --setting k=v … --credential k=v …``

Adds a chat-bot channel to the assistant and prints one JSON line ``{"id": …, "callback_url": "/bots/…/"}``: the path
on this site to give the platform (docs/integrations.md). Bad input is a CommandError naming the problem.
"""
from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from assistants.models import Assistant
from bots.platforms import PLATFORMS
from bots.services import channel_create
from core.errors import ApplicationError


def pairs(values: list[str], option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values:
        name, sep, text = value.partition("=")
        if not sep or not name.strip():
            raise CommandError(f"{option} takes name=value, not {value!r}")
        out[name.strip()] = text
    return out


class Command(BaseCommand):
    help = "Add a Feishu, DingTalk or WeCom channel to an assistant and print its id and callback URL as JSON."

    def add_arguments(self, parser):
        parser.add_argument("--assistant", required=True, help="the assistant's id")
        parser.add_argument("--kind", required=True, choices=sorted(PLATFORMS))
        parser.add_argument("--name", default="", help="default: the kind")
        parser.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE")
        parser.add_argument("--credential", action="append", default=[], metavar="NAME=VALUE",
                            help="stored encrypted; e.g. app_secret=…")

    def handle(self, *args, **opts):
        raw = str(opts["assistant"])
        assistant = Assistant.objects.filter(pk=int(raw)).first() if raw.isdigit() else None
        if assistant is None:
            raise CommandError(f"no assistant with id {raw!r}")
        try:
            channel = channel_create(assistant=assistant, kind=opts["kind"], name=opts["name"] or opts["kind"],
                                     settings=pairs(opts["setting"], "--setting"),
                                     credentials=pairs(opts["credential"], "--credential"))
        except ApplicationError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from None
        self.stdout.write(json.dumps({"id": channel.pk, "callback_url": channel.callback_url}))
