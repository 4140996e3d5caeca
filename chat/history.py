"""Saved conversations as their reader may read them now: sources re-checked against the access rule.

Sources and citations are stored as answered (``chat.models.Message``). ``readable_view`` replaces each source whose
passage the reader can no longer read (``knowledge.access.documents_readable_q``, or the version that replaced it)
by ``{"n": n, "redacted": true}``, and its citation too, and withholds an answer given from one (``content`` empty,
``content_redacted``). One query per conversation checks every document its sources name.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from chat.models import Message, Role
from knowledge.access import documents_readable_q
from knowledge.models import Document


@dataclass(frozen=True)
class ReadableMessage:
    """What the reader is shown of a message: its content, sources and citations, redacted where needed."""

    content: str
    sources: list[dict[str, Any]]
    citations: list[dict[str, Any]]
    content_redacted: bool
    """The answer text is withheld: it was given from a passage the reader can no longer read."""
    sources_redacted: int
    """How many of its sources are withheld."""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _where(entry: Any) -> tuple[int | None, int | None, str | None]:
    """(document id, KB id, source name) a stored source or citation names; None where it names none."""
    if not isinstance(entry, dict):
        return None, None, None
    document = entry.get("document")
    if not isinstance(document, dict):
        document = {}
    name = document.get("source_name")
    return _int(document.get("id")), _int(entry.get("kb_id")), name if isinstance(name, str) and name else None


class Readable:
    """Which passages of a set of messages a user may read now (one query, made on construction)."""

    def __init__(self, *, user, messages: Iterable[Message]):
        wheres = [_where(entry) for m in messages for entry in [*(m.sources or []), *(m.citations or [])]]
        ids = {d for d, _, _ in wheres if d is not None}
        kbs = {k for _, k, n in wheres if k is not None and n is not None}
        names = {n for _, k, n in wheres if k is not None and n is not None}
        self.document_ids: set[int] = set()
        self.sources: set[tuple[int, str]] = set()
        if not ids and not names:
            return
        wanted = Q(id__in=ids) | Q(kb_id__in=kbs, source_name__in=names) if names else Q(id__in=ids)
        for document_id, kb_id, name in (Document.objects.filter(documents_readable_q(user=user)).filter(wanted)
                                         .values_list("id", "kb_id", "source_name")):
            self.document_ids.add(document_id)
            self.sources.add((kb_id, name))

    def allows(self, entry: Any) -> bool:
        document_id, kb_id, name = _where(entry)
        return document_id in self.document_ids or (kb_id is not None and (kb_id, name) in self.sources)

    def entry(self, entry: Any) -> dict[str, Any]:
        """The stored source or citation, or ``{"n", "redacted": true}`` in its place."""
        if self.allows(entry):
            return entry
        n = entry.get("n") if isinstance(entry, dict) else None
        return {"n": _int(n), "redacted": True}

    def message(self, message: Message) -> ReadableMessage:
        sources = [self.entry(s) for s in message.sources or []]
        citations = [self.entry(c) for c in message.citations or []]
        withheld = sum(1 for s in sources if s.get("redacted") is True)
        cited_withheld = any(c.get("redacted") is True for c in citations)
        # A not-found answer is the KB's not-found text, given from no passage.
        content_redacted = message.role == Role.ASSISTANT and message.hit is not False and bool(withheld or cited_withheld)
        return ReadableMessage(
            content="" if content_redacted else message.content, sources=sources, citations=citations,
            content_redacted=content_redacted, sources_redacted=withheld,
        )


def readable_view(*, user, messages: Sequence[Message]) -> dict[int, ReadableMessage]:
    """Each message (by id) as ``user`` may read it now."""
    readable = Readable(user=user, messages=messages)
    return {m.pk: readable.message(m) for m in messages}
