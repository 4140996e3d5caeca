"""A document's own metadata: the fields its editors set (``Document.metadata["fields"]``), apart from what ingestion
writes beside them (the parser's ``author``, ``timings_ms`` and the other bookkeeping). They are what Dify's
records show of a document and what its ``metadata_condition`` names (assistants/dify.py), and the search's
metadata filter matches them (knowledge/stores.py). Pure functions, no Django."""
from __future__ import annotations

from typing import Any

from core.errors import fail
from knowledge.errors import KnowledgeError

KEY = "fields"
"""Where the fields live in ``Document.metadata``."""
MAX_FIELDS = 32
MAX_NAME_CHARS = 64
MAX_VALUE_CHARS = 500
MAX_LIST_ITEMS = 20
RESERVED = ("document_id", "chunk_id", "title", "source_name", "section", "page", "source_url", "chunk_type")
"""The names every record gives of its document and chunk (assistants/dify.py): no field may take one."""


def _value_ok(value: Any) -> bool:
    if isinstance(value, list):
        return len(value) <= MAX_LIST_ITEMS and all(not isinstance(v, list) and _value_ok(v) for v in value)
    if isinstance(value, str):
        return len(value) <= MAX_VALUE_CHARS
    return isinstance(value, (bool, int, float))


def fields_clean(raw: Any) -> dict[str, Any]:
    """``raw`` as a document's fields, or 400 ``invalid_document_fields``: an object of at most ``MAX_FIELDS``
    names (1–64 characters, none of ``RESERVED``), each a text, a number, true/false or a list of them."""
    if not isinstance(raw, dict) or len(raw) > MAX_FIELDS:
        raise fail(KnowledgeError.INVALID_DOCUMENT_FIELDS, limit=MAX_FIELDS, reserved=", ".join(RESERVED))
    for name, value in raw.items():
        if not (isinstance(name, str) and 0 < len(name.strip()) == len(name) <= MAX_NAME_CHARS) or "\x00" in name:
            raise fail(KnowledgeError.INVALID_DOCUMENT_FIELDS, "name", name=str(name)[:MAX_NAME_CHARS])
        if name in RESERVED:
            raise fail(KnowledgeError.INVALID_DOCUMENT_FIELDS, "reserved", name=name, reserved=", ".join(RESERVED))
        if not _value_ok(value) or (isinstance(value, str) and "\x00" in value):
            raise fail(KnowledgeError.INVALID_DOCUMENT_FIELDS, "value", name=name, limit=MAX_VALUE_CHARS)
    return dict(raw)


def document_fields(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """The fields stored in a document's ``metadata`` ({} when none were set)."""
    fields = (metadata or {}).get(KEY)
    return dict(fields) if isinstance(fields, dict) else {}
