"""The one check of a question and the KBs it is asked of: chat turns and searches refuse the same input with the same code.

``query_clean`` and ``kb_ids_clean`` raise ``ValidationFailed`` (400) before any KB
is looked up; the REST serializers (``knowledge/api/search.py``, ``chat/api.py``)
state the same limits in the schema. Codes: docs/api.md, "Question and KB codes".
"""
from __future__ import annotations

from typing import Any

from core.errors import fail
from knowledge.errors import KnowledgeError

MAX_QUERY_CHARS = 1000
MAX_KBS = 20
MAX_TOP_K = 50


def query_clean(query: Any) -> str:
    """The stripped question or query: ``empty_question`` when blank, ``question_too_long`` over ``MAX_QUERY_CHARS``."""
    if not isinstance(query, str) or not query.strip():
        raise fail(KnowledgeError.EMPTY_QUESTION)
    query = query.strip()
    if len(query) > MAX_QUERY_CHARS:
        raise fail(KnowledgeError.QUESTION_TOO_LONG, limit=MAX_QUERY_CHARS)
    return query


def kb_ids_clean(kb_ids: Any, *, required: bool = True) -> list[int]:
    """The KB ids, duplicates dropped, first mention first: ``invalid_kb_ids``, ``too_many_kbs``, ``no_kbs``.

    ``required=False``: none (or an empty list) is ``[]``, for a chat turn that
    falls back to its conversation's KBs (which are then checked for ``no_kbs``).
    """
    if kb_ids is None:
        kb_ids = []
    if not isinstance(kb_ids, (list, tuple)) or not all(isinstance(k, int) and not isinstance(k, bool) for k in kb_ids):
        raise fail(KnowledgeError.INVALID_KB_IDS)
    ids = list(dict.fromkeys(kb_ids))
    if len(ids) > MAX_KBS:
        raise fail(KnowledgeError.TOO_MANY_KBS, limit=MAX_KBS)
    if required:
        kb_ids_required(ids)
    return ids


def kb_ids_required(ids: list[int]) -> list[int]:
    """``ids`` when there is at least one, else ``no_kbs``."""
    if not ids:
        raise fail(KnowledgeError.NO_KBS)
    return ids
