"""The OpenAPI schema in the reader's language (a drf-spectacular post-processing hook, the last one).

``/api/schema/`` is generated per request, under the language ``LocaleMiddleware`` chose (the language switch's
cookie, then ``Accept-Language``, then Chinese; drf-spectacular's ``?lang=`` overrides both), and nothing caches it,
so each language gets its own. This hook puts the schema's own words into that language: its title and description,
each operation's summary and description, its parameters', request body's and responses' descriptions, and the
components' descriptions and their fields' (``gettext_lazy`` at the views, or plain English from a docstring, a
serializer's ``help_text``, ``core.api.schema`` or ``chat.openapi``: looked up here in the catalogue,
``locale/zh_Hans/LC_MESSAGES/api_docs*.po.part``) and the tags (``TAGS``: the first path segment drf-spectacular
tags an operation with, named for people). A text is looked up whole, else paragraph by paragraph, else line by line
(a list's marker kept), so what drf-spectacular or ``core.api.schema`` appends (an enum's ``* `value` - value``
lines, "Rules across fields:" and its rules) is translated once for every text it follows. Field names, codes,
enum values and paths never change with the language (docs/api.md, docs/i18n.md).
"""
from __future__ import annotations

import re
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


LIST_MARKER = re.compile(r"^(\s*[-*] )(.*)$")


def _looked_up(text: str) -> str | None:
    """``text``'s translation in the active language; None when the catalogue has none (or it is blank)."""
    said = gettext(text) if text.strip() else text
    return said if said != text else None


def _line(line: str) -> str:
    marked = LIST_MARKER.match(line)
    if marked:
        return marked.group(1) + (_looked_up(marked.group(2)) or marked.group(2))
    return _looked_up(line) or line


def _paragraph(paragraph: str) -> str:
    said = _looked_up(paragraph)
    if said is not None or "\n" not in paragraph:
        return said if said is not None else paragraph
    return "\n".join(_line(line) for line in paragraph.split("\n"))


def _said(text: Any) -> Any:
    """``text`` in the active language: a lazy string resolved, a plain one looked up whole, else by paragraph,
    else by line (itself where untranslated)."""
    if isinstance(text, Promise):
        return str(text)
    if not isinstance(text, str) or not text:
        return text
    said = _looked_up(text)
    if said is not None:
        return said
    return "\n\n".join(_paragraph(paragraph) for paragraph in text.split("\n\n"))


VALUES = ("example", "examples", "default", "enum", "const")  # data, not words: never translated


def _described(node: Any, names: bool = False) -> Any:
    """``node`` (a schema object, an operation's parameters, body or responses) with every ``description`` in it and
    under it (properties, items, allOf…) translated: a copy, since a hook's parts may be module constants
    (``chat.openapi.ASK``) that the next request, in another language, reads again. ``names``: ``node`` maps field
    names to schemas (``properties``), so a field called ``default`` is one too."""
    if isinstance(node, dict):
        return {key: (_described(value) if names
                      else _said(value) if key == "description" and isinstance(value, (str, Promise))
                      else value if key in VALUES
                      else _described(value, names=key in ("properties", "patternProperties")))
                for key, value in node.items()}
    if isinstance(node, list):
        return [_described(item) for item in node]
    return node


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
            for part in ("parameters", "requestBody", "responses"):
                if part in operation:
                    operation[part] = _described(operation[part])
            named = [str(TAGS[tag]) if tag in TAGS else tag for tag in operation.get("tags", [])]
            operation["tags"] = named
            used += [name for name in named if name not in used]
    if "components" in result:
        result["components"] = _described(result["components"])
    order = [str(name) for name in TAGS.values()]
    result["tags"] = [{"name": name} for name in sorted(used, key=lambda n: (order.index(n) if n in order else len(order), n))]
    return result


# drf-spectacular's settings (config/settings.py takes them from here).
SPECTACULAR_SETTINGS = {
    # English here (the Swagger page's title, the download's file name); the schema itself says them, its summaries,
    # descriptions and tags in the reader's language (``translate_schema``, the last hook below).
    "TITLE": TITLE,
    "DESCRIPTION": DESCRIPTION,
    "VERSION": "0.1.0",
    # The schema endpoint is how the API is described, not part of it.
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Two choice sets share the field name "role": a KB member's and a chat message's.
    "ENUM_NAME_OVERRIDES": {"KbRoleEnum": "knowledge.models.Role", "MessageRoleEnum": "chat.models.Role",
                            "ChunkTypeEnum": "knowledge.models.ChunkType",
                            "ApiKeyKindEnum": "assistants.models.KeyKind",
                            "EndpointKindEnum": "providers.presets.EndpointKind", "BotKindEnum": "bots.models.BotKind"},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        # The SSE chat endpoint is a plain async Django view, out of drf-spectacular's reach.
        "chat.openapi.add_chat_stream",
        "config.openapi.translate_schema",
    ],
}
