"""REST endpoints for a chunk's history: its revisions with what changed (a diff), and reverting one."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.pagination import PaginatedView
from core.api.schema import errors
from core.errors import fail
from core.names import display_name
from knowledge import selectors
from knowledge.api import serializers as s
from knowledge.api.versions import Redirecting, document_or_redirect
from knowledge.errors import KnowledgeError
from knowledge.models import Chunk, Role
from knowledge.services.revisions import revision_list, revision_revert
from knowledge.text_diff import text_diff, unified_diff


class DiffRunOutput(serializers.Serializer):
    op = serializers.ChoiceField(choices=["equal", "delete", "insert"])
    text = serializers.CharField()


class ChunkRevisionOutput(serializers.Serializer):
    number = serializers.IntegerField(help_text="1, 2, 3… in the order the chunk's text changed")
    kind = serializers.CharField(help_text="create (added by hand), edit, revert, pin (kept at a re-ingest)")
    kind_label = serializers.CharField(source="get_kind_display", help_text="The kind in the reader's language")
    user = serializers.CharField(source="user.username", allow_null=True, default=None,
                                 help_text="Who (null: the platform, e.g. a re-ingest, or a deleted account)")
    user_name = serializers.SerializerMethodField(help_text="Who, by name where they have one (core/names.py)")
    created_at = serializers.DateTimeField()
    document_version = serializers.IntegerField(allow_null=True, help_text="The document's version at the time")
    reverts = serializers.IntegerField(allow_null=True, help_text="For a revert: the revision whose earlier text it restored")
    content_before = serializers.CharField(allow_blank=True)
    content_after = serializers.CharField()
    diff = serializers.SerializerMethodField(help_text="The runs of content_after against content_before, in order: "
                                                       "equal, delete, insert (CJK compared by character)")
    unified_diff = serializers.SerializerMethodField(help_text="The same change as a line-by-line unified diff")

    def get_user_name(self, revision) -> str:
        return display_name(revision.user)

    @extend_schema_field(DiffRunOutput(many=True))
    def get_diff(self, revision) -> list[dict[str, str]]:
        return text_diff(revision.content_before, revision.content_after)

    def get_unified_diff(self, revision) -> str:
        return unified_diff(revision.content_before, revision.content_after, before_name=f"r{revision.number}^",
                            after_name=f"r{revision.number}")


def _chunk(request: Request, kb_id: int, document_id: int, chunk_id: int, min_role: Role = Role.VIEWER) -> Chunk:
    """The chunk of the document the caller may read (404 ``kb_not_found``, ``document_not_found``, ``chunk_not_found``;
    403 ``role_required`` under ``min_role``); an old id of the document answers 308."""
    kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=min_role)
    document = document_or_redirect(request, kb, document_id)
    chunk = selectors.chunk_get_for_user(user=request.user, kb=kb, chunk_id=chunk_id)
    if chunk.document_id != document.pk:
        raise fail(KnowledgeError.CHUNK_NOT_FOUND)
    return chunk


class ChunkRevisionListView(Redirecting, PaginatedView):
    @extend_schema(responses={200: ChunkRevisionOutput(many=True), 308: None},
                   summary=_("A chunk's revisions, newest first: who changed its text, when, before and after, as a diff"))
    def get(self, request, kb_id: int, document_id: int, chunk_id: int):
        return self.paginated(revision_list(chunk=_chunk(request, kb_id, document_id, chunk_id)), ChunkRevisionOutput)


class ChunkRevisionRevertView(Redirecting, APIView):
    @extend_schema(request=None, responses={200: s.ChunkOutput, **errors(404, 409)},
                   summary=_("Set the chunk's text back to what it was before revision n (editor)"),
                   description="The text is re-embedded and re-indexed at once, and the revert is itself a revision "
                               "(kind `revert`). 404 `revision_not_found`; 409 `revision_not_revertible` for the "
                               "revision that added the chunk (no text before it). Text already the same is left as it is.")
    def post(self, request, kb_id: int, document_id: int, chunk_id: int, number: int):
        chunk = _chunk(request, kb_id, document_id, chunk_id, min_role=Role.EDITOR)
        chunk = revision_revert(chunk=chunk, number=number, user=request.user)
        return Response(s.ChunkOutput(chunk).data)

