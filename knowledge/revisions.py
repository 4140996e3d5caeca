"""Writing a chunk's revisions (knowledge/revision_models.py), in the transaction of the change they record.

The chunk edits (knowledge/services/chunks.py) and the re-ingest that keeps edited chunks (knowledge/ingestion/
pinning.py) write them; knowledge/services/revisions.py lists and reverts them.
"""
from __future__ import annotations

from typing import Any

from django.db.models import F, Max

from core.audit.context import who
from knowledge.models import Chunk, ChunkRevision, RevisionKind


def acting_user(user: Any = None) -> Any:
    """``user`` when given and signed in, else the person of the current request (core/audit/context.py), else None."""
    if user is None:
        user = who()[0]
    return user if user is not None and getattr(user, "is_authenticated", False) and user.pk is not None else None


def revision_add(*, chunk: Chunk, kind: str, before: str, after: str, document_version: int | None, user: Any = None,
                 reverts: int | None = None) -> ChunkRevision:
    """Record a change of ``chunk``'s text as its next revision; call while holding the chunk's KB row
    (knowledge/locks.py), so two writers never take the same number."""
    RevisionKind(kind)  # a kind outside the vocabulary is a programming error
    last = ChunkRevision.objects.filter(chunk_id=chunk.pk).aggregate(n=Max("number"))["n"] or 0
    return ChunkRevision.objects.create(
        chunk_id=chunk.pk, kb_id=chunk.kb_id, document_id=chunk.document_id, number=last + 1, kind=kind,
        content_before=before, content_after=after, reverts=reverts, document_version=document_version,
        user=acting_user(user))


def revisions_move(*, from_chunk_id: int, to_chunk_id: int) -> int:
    """Give the revisions of one chunk to another (a re-ingest found the edited text in a new chunk), numbered after
    the ones it has; returns how many moved. Call while holding the KB row."""
    offset = ChunkRevision.objects.filter(chunk_id=to_chunk_id).aggregate(n=Max("number"))["n"] or 0
    # Every moved number lands above the target's, so no row ever collides with the unique (chunk, number).
    return ChunkRevision.objects.filter(chunk_id=from_chunk_id).update(chunk_id=to_chunk_id, number=F("number") + offset)
