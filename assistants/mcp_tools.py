"""The MCP tools' work in the database: who the key is, what it reaches now, its searches and its assistant's turns.

Synchronous (the ORM); ``assistants.mcp_server`` runs each function in a worker thread (``chat.services.in_thread``)
and shapes nothing itself: every payload the tools return is built here. Access is the key's *now*: each call
goes through ``assistants.services.key_kbs`` / ``key_search`` / ``assistant_turn_start``, which re-check what the
assistant's owner (or the KB key's creator) may read at that moment.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from assistants.errors import AssistantsError
from assistants.keys import key_authenticate
from assistants.models import ApiKey, KeyKind
from assistants.services import assistant_turn_start, key_kbs, key_search
from chat.models import Channel
from chat.services import Turn
from core.errors import fail
from core.jsonable import jsonable, number
from knowledge.models import KnowledgeBase
from knowledge.not_found import not_found_text
from knowledge.retrieval.protocols import SearchFilters
from knowledge.retrieval.request import SearchRequest
from knowledge.retrieval.types import Candidate, RetrievalResult
from knowledge.selectors import kbs_with_caller_info
from knowledge.services.query_input import kb_ids_clean
from knowledge.services.search import MAX_METADATA_KEY_CHARS, MAX_METADATA_KEYS, MAX_METADATA_VALUE_CHARS


@dataclass(frozen=True)
class Caller:
    """Who calls the tools: the key as sent, and its row when the HTTP request already authenticated it.

    Over streamable HTTP each request is authenticated before the SDK sees it (``assistants.mcp_http``), so
    ``row`` is set (for an OAuth token, an unsaved key row of the token's target and person); over stdio
    (``manage.py mcp_stdio``) ``row`` is None and each tool call authenticates the key again, so a key revoked
    while a desktop client stays open stops working at its next call.
    """

    key: str
    row: ApiKey | None = None
    language: str = ""
    visitor: str = ""
    """Whose conversations ``ask_assistant`` continues: a signed-in client's (assistants/mcp_auth/bearer.py);
    empty for a key, whose conversations are its own (``visitor_of``)."""


def caller_key(caller: Caller) -> ApiKey:
    """The caller's live key (``key_invalid`` once revoked, ``key_rate_limited`` over its budget)."""
    return caller.row if caller.row is not None else key_authenticate(caller.key)


def _reader(row: ApiKey):
    """Whose access the key borrows: the assistant's owner, or the KB key's creator."""
    return row.target_assistant.owner if row.kind == KeyKind.ASSISTANT else row.created_by


# --- list_knowledge_bases ---------------------------------------------------------------------------------------

def kbs_listing(caller: Caller) -> dict[str, Any]:
    """The KBs the key reaches now, in the assistant's order, with the documents and chunks its reader may read."""
    row = caller_key(caller)
    kbs, _, _ = key_kbs(row)
    counted = {kb.pk: kb for kb in kbs_with_caller_info(KnowledgeBase.objects.filter(pk__in=[kb.pk for kb in kbs]),
                                                        user=_reader(row))}
    assistant = None
    if row.kind == KeyKind.ASSISTANT:
        target = row.target_assistant
        assistant = {"id": target.pk, "name": target.name, "description": target.description}
    return {
        "key_kind": row.kind, "assistant": assistant,
        "knowledge_bases": [
            {"id": kb.pk, "name": kb.name, "description": kb.description,
             "document_count": getattr(counted.get(kb.pk), "document_count", 0),
             "chunk_count": getattr(counted.get(kb.pk), "chunk_count", 0)}
            for kb in kbs
        ],
    }


# --- search_knowledge -------------------------------------------------------------------------------------------

def metadata_pairs(metadata: Any) -> tuple[tuple[str, str], ...]:
    """``{key: value}`` → sorted ``((key, text), ...)``, the rule of the REST search's ``filters.metadata``
    (knowledge/api/search.py ``MetadataFilter``): a string, number or boolean each, compared as text."""
    if metadata is None:
        return ()
    limits: dict[str, Any] = {"keys": MAX_METADATA_KEYS, "key_chars": MAX_METADATA_KEY_CHARS, "value_chars": MAX_METADATA_VALUE_CHARS}
    if not isinstance(metadata, dict) or len(metadata) > MAX_METADATA_KEYS:
        raise fail(AssistantsError.INVALID_METADATA_FILTER, **limits)
    pairs = []
    for key, value in metadata.items():
        if not isinstance(key, str) or len(key) > MAX_METADATA_KEY_CHARS:
            raise fail(AssistantsError.INVALID_METADATA_FILTER, **limits)
        if isinstance(value, bool):
            text = json.dumps(value)  # "true" / "false", as PostgreSQL's ->> reads a JSON boolean
        elif isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
            text = str(value)
        elif isinstance(value, str) and len(value) <= MAX_METADATA_VALUE_CHARS:
            text = value
        else:
            raise fail(AssistantsError.INVALID_METADATA_FILTER, **limits)
        pairs.append((key, text))
    return tuple(sorted(pairs))


def _result_item(c: Candidate) -> dict[str, Any]:
    sections = [s for s in c.section_path if s]
    return {
        "chunk_id": c.chunk_id, "kb_id": c.kb_id,
        "document": {"id": c.document_id, "title": c.title, "source_name": c.source_name, "source_url": c.source_url},
        "section": " › ".join(sections), "section_path": sections, "pages": {"start": c.page_start, "end": c.page_end},
        "relevance": number(c.relevance), "text": c.content,
        "metadata": jsonable(c.metadata) if isinstance(c.metadata, dict) else {},
    }


def search_payload(result: RetrievalResult) -> dict[str, Any]:
    """A search's verdict, its two lines and its results (a not-found search's results are its nearest misses).

    ``not_found_text``: the KB's own as written, the shipped default in the active language (knowledge/not_found.py),
    the one ``assistants.mcp_server`` sets from the request's Accept-Language (Chinese by default)."""
    return {
        "verdict": result.verdict, "relevance": number(result.relevance), "threshold": number(result.threshold),
        "answer_threshold": number(result.answer_threshold),
        "not_found_text": not_found_text(result.not_found_text) if not result.hit else "",
        "results": [_result_item(c) for c in result.candidates],
    }


def knowledge_search(caller: Caller, *, query: Any, kb_ids: Any = None, top_k: Any = None,
                     metadata: Any = None) -> dict[str, Any]:
    """Search what the key reaches now (``kb_ids``: some of those KBs), metadata equalities all holding."""
    row = caller_key(caller)
    ids = kb_ids_clean(kb_ids, required=False)
    request = SearchRequest(query=query, top_k=top_k, filters=SearchFilters(metadata=metadata_pairs(metadata)))
    return search_payload(key_search(row, request, kb_ids=ids or None))


# --- ask_assistant ----------------------------------------------------------------------------------------------

def visitor_of(row: ApiKey) -> str:
    """The conversations of one key are its own: another key of the same assistant cannot continue them."""
    return f"mcp-key-{row.pk}"


def ask_start(caller: Caller, *, question: Any, conversation_id: Any = None) -> Turn:
    """A turn of the key's assistant on the ``mcp`` channel (a KB key: ``key_wrong_kind``)."""
    row = caller_key(caller)
    if row.kind != KeyKind.ASSISTANT:
        raise fail(AssistantsError.KEY_WRONG_KIND, needed=KeyKind.ASSISTANT.label)
    return assistant_turn_start(assistant=row.target_assistant, question=question, channel=Channel.MCP,
                                visitor=caller.visitor or visitor_of(row), conversation_id=conversation_id)


def answer_payload(finish: dict[str, Any], sources: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``finish`` event of ``chat.services.turn_stream`` as the tool's answer: citations with their relevance."""
    relevance = {s["n"]: (s.get("scores") or {}).get("relevance") for s in sources}
    citations = [{**c, "section": " › ".join(s for s in c.get("section_path") or [] if s),
                  "relevance": relevance.get(c["n"])} for c in finish.get("citations") or []]
    return {
        "answer": finish["answer"], "verdict": finish["verdict"], "hit": finish["hit"],
        "confidence": finish.get("confidence"), "citations": citations,
        "conversation_id": finish["conversation"], "message_id": finish["message"],
    }
