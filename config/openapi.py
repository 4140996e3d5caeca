"""The OpenAPI schema in the reader's language (a drf-spectacular post-processing hook, the last one).

``/api/schema/`` is generated per request, under the language ``LocaleMiddleware`` chose (the language switch's
cookie, then ``Accept-Language``, then Chinese; drf-spectacular's ``?lang=`` overrides both), and nothing caches it,
so each language gets its own. This hook puts the schema's own words into that language: its title and description,
each operation's summary and description (``gettext_lazy`` at the views, or plain English from a docstring or
``chat.openapi``: looked up here in the catalogue, ``locale/zh_Hans/LC_MESSAGES/api_docs.po.part``) and the tags
(``TAGS``: the first path segment drf-spectacular tags an operation with, named for people). Field names, codes,
enum values and paths never change with the language (docs/api.md, docs/i18n.md).
"""
from __future__ import annotations

from typing import Any

from django.utils.functional import Promise
from django.utils.translation import gettext, pgettext_lazy

TITLE = "zhiku API"
DESCRIPTION = ("zhiku (知库): knowledge bases, documents, chunks, hybrid search and chat. Error codes stay English "
               "whatever the language; messages follow it (docs/api.md).")

# drf-spectacular's tag (the path segment after /api/) → its name in the reader's language, in the order shown.
TAGS: dict[str, Promise] = {
    "kbs": pgettext_lazy("openapi tag", "Knowledge bases"),
    "search": pgettext_lazy("openapi tag", "Search"),
    "chat": pgettext_lazy("openapi tag", "Chat"),
    "conversations": pgettext_lazy("openapi tag", "Conversations"),
    "messages": pgettext_lazy("openapi tag", "Answer feedback"),
    "tools": pgettext_lazy("openapi tag", "Agent tools"),
    "assistants": pgettext_lazy("openapi tag", "Assistants"),
    "bot-kinds": pgettext_lazy("openapi tag", "Bot channel kinds"),
    "sources": pgettext_lazy("openapi tag", "Sources"),
    "source-runs": pgettext_lazy("openapi tag", "Source runs"),
    "source-kinds": pgettext_lazy("openapi tag", "Source kinds"),
    "models": pgettext_lazy("openapi tag", "Models"),
    "model-endpoints": pgettext_lazy("openapi tag", "Model endpoints"),
    "people": pgettext_lazy("openapi tag", "People and groups"),
    "auth": pgettext_lazy("openapi tag", "Sign-in and API tokens"),
    "account": pgettext_lazy("openapi tag", "Your account"),
    "audit": pgettext_lazy("openapi tag", "Audit log"),
}


def _said(text: Any) -> Any:
    """``text`` in the active language: a lazy string resolved, a plain one looked up (itself when untranslated)."""
    if isinstance(text, Promise):
        return str(text)
    return gettext(text) if isinstance(text, str) and text else text


def translate_schema(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """The post-processing hook: ``result`` with its words in the active language (see the module's docstring)."""
    info = result.setdefault("info", {})
    info["title"] = gettext(TITLE)
    info["description"] = gettext(DESCRIPTION)
    used: list[str] = []
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            for key in ("summary", "description"):
                if key in operation:
                    operation[key] = _said(operation[key])
            named = [str(TAGS[tag]) if tag in TAGS else tag for tag in operation.get("tags", [])]
            operation["tags"] = named
            used += [name for name in named if name not in used]
    order = [str(name) for name in TAGS.values()]
    result["tags"] = [{"name": name} for name in sorted(used, key=lambda n: (order.index(n) if n in order else len(order), n))]
    return result
