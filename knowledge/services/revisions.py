"""A chunk's history: its revisions listed newest first, and reverting one (through ``chunk_update``).

"Revert revision n" sets the chunk's text back to the text it had *before* revision n (its ``content_before``), so
reverting a chunk's first edit gives back the file's own text; the revert is itself a revision (kind ``revert``,
``reverts`` n), re-embedded, re-indexed and audited like any edit.
"""
from __future__ import annotations

from django.db.models import QuerySet

from core.errors import fail
from knowledge.errors import KnowledgeError
from knowledge.models import Chunk, ChunkRevision, RevisionKind
from knowledge.services.chunks import chunk_update


def revision_list(*, chunk: Chunk) -> QuerySet[ChunkRevision]:
    """The chunk's revisions, newest first, with their authors."""
    return ChunkRevision.objects.filter(chunk_id=chunk.pk).select_related("user").order_by("-number")


def revision_revert(*, chunk: Chunk, number: int, user=None) -> Chunk:
    """Set ``chunk``'s text back to what it was before revision ``number``; returns the chunk.

    404 ``revision_not_found``; 409 ``revision_not_revertible`` for the revision that added the chunk (there was no
    text before it: disable the chunk instead). Text already the same is left as it is (no new revision).
    """
    revision = ChunkRevision.objects.filter(chunk_id=chunk.pk, number=number).first()
    if revision is None:
        raise fail(KnowledgeError.REVISION_NOT_FOUND, number=number)
    if revision.kind == RevisionKind.CREATE or not revision.content_before.strip():
        raise fail(KnowledgeError.REVISION_NOT_REVERTIBLE, number=number)
    return chunk_update(chunk=chunk, content=revision.content_before, user=user, kind=RevisionKind.REVERT, reverts=number)
