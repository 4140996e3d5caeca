"""``manage.py assistant_publish --owner USERNAME --name NAME [--share off|public|members] [--rotate]
[--origin ORIGIN ...] [--site URL]``: turn an assistant's share link and embedding on or off, print where they are.

Prints one JSON line: ``id``, ``share_access``, ``share_url`` (null when off), ``allowed_origins``, and, when some
origin is listed, the two embed snippets (``embed_script``, ``embed_iframe``) of docs/integrations.md. ``--origin``
replaces the listed origins (``--origin ""`` lists none: no embedding); ``--rotate`` gives the link a new token, so
the old link stops working at once.
"""
from __future__ import annotations

import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils.html import escape

from assistants.models import Assistant, ShareAccess
from assistants.services import assistant_update, share_token_rotate
from core.errors import ApplicationError


def published(assistant: Assistant, site: str) -> dict:
    site = site.rstrip("/")
    out = {"id": assistant.pk, "share_access": assistant.share_access, "allowed_origins": list(assistant.allowed_origins),
           "share_url": f"{site}/s/{assistant.share_token}/" if assistant.share_access != ShareAccess.OFF else None}
    if assistant.allowed_origins:
        out["embed_script"] = f'<script src="{site}/embed/{assistant.pk}.js" defer></script>'
        out["embed_iframe"] = (f'<iframe src="{site}/embed/{assistant.pk}/chat/" title="{escape(assistant.name)}" '
                               'style="width:380px;height:600px;border:0"></iframe>')
    return out


class Command(BaseCommand):
    help = "Set an assistant's share link and embedding origins and print its share URL and embed snippets as JSON."

    def add_arguments(self, parser):
        parser.add_argument("--owner", required=True)
        parser.add_argument("--name", required=True, help="the assistant's name")
        parser.add_argument("--share", choices=ShareAccess.values)
        parser.add_argument("--rotate", action="store_true", help="a new share token: the old link stops working")
        parser.add_argument("--origin", action="append", help="a site that may embed the chat; repeat for several")
        parser.add_argument("--site", default="http://127.0.0.1:8000", help="this platform's address, for the links")

    def handle(self, *args, **opts):
        owner = get_user_model().objects.filter(username=opts["owner"]).first()
        assistant = Assistant.objects.filter(owner=owner, name=opts["name"]).first() if owner else None
        if assistant is None:
            raise CommandError(f"{opts['owner']!r} has no assistant named {opts['name']!r}")
        values = {}
        if opts["share"]:
            values["share_access"] = opts["share"]
        if opts["origin"] is not None:
            values["allowed_origins"] = [o for o in opts["origin"] if o.strip()]
        try:
            if values:
                assistant = assistant_update(assistant=assistant, user=owner, **values)
            if opts["rotate"]:
                share_token_rotate(assistant=assistant)
        except ApplicationError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from None
        self.stdout.write(json.dumps(published(assistant, opts["site"]), ensure_ascii=False))
