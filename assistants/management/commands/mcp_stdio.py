"""``manage.py mcp_stdio --key KEY``: the MCP server's tools over stdio, for desktop clients that start a command.

The same tools as ``/mcp/`` (assistants/mcp_server.py) under the SDK's stdio transport: JSON-RPC on stdin and
stdout, logs on stderr. The key (``--key`` or ``ZHIKU_MCP_KEY``, so that it need not show in the process list)
is checked once at start, then again at each tool call, so a key revoked meanwhile stops working at once.
"""
from __future__ import annotations

import os

import anyio
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from assistants.keys import key_authenticate
from assistants.mcp_server import CALLER, server
from assistants.mcp_tools import Caller
from core.errors import ApplicationError


class Command(BaseCommand):
    help = "Serve the MCP tools (list_knowledge_bases, search_knowledge, ask_assistant) over stdio for one API key."

    def add_arguments(self, parser):
        parser.add_argument("--key", default="", help="an assistant key or a KB key (default: $ZHIKU_MCP_KEY)")
        parser.add_argument("--language", default=settings.LANGUAGE_CODE,
                            help="the language of error messages (zh-hans or en)")

    def handle(self, *args, **opts):
        key = (opts["key"] or os.environ.get("ZHIKU_MCP_KEY", "")).strip()
        if not key:
            raise CommandError("key_missing: pass --key KEY or set ZHIKU_MCP_KEY")
        try:
            key_authenticate(key)
        except ApplicationError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from None
        CALLER.set(Caller(key=key, language=opts["language"]))
        anyio.run(server.run_stdio_async)
