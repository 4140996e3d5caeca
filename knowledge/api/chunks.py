"""REST endpoints for chunks: list and filter, read, add by hand, edit or switch off."""
from __future__ import annotations

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.fields import QueryValues
from core.api.inputs import parse
from core.api.pagination import PaginatedView
from core.api.parsers import SafeJSONParser
from core.api.schema import errors
from core.errors import CoreError, fail
from knowledge import selectors
from knowledge.api import serializers as s
from knowledge.models import Role
from knowledge.services.chunks import chunk_create, chunk_update


class ChunkListView(PaginatedView):
    parser_classes = [SafeJSONParser]

    @extend_schema(request=s.ChunkCreateInput, responses={201: s.ChunkOutput, **errors(409)},
                   summary=_("Add a chunk written by hand to a ready document (editor); it is embedded and indexed at once"))
    def post(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        data = parse(s.ChunkCreateInput, request.data)
        document = selectors.document_get_for_user(user=request.user, kb=kb, document_id=data["document"])
        chunk = chunk_create(document=document, content=data["content"], section_path=data.get("section_path", []),
                             user=request.user)
        return Response(s.ChunkOutput(chunk).data, status=status.HTTP_201_CREATED)

    @extend_schema(summary=_("The KB's chunks (filtered)"), responses=s.ChunkWithTokensOutput(many=True), parameters=[s.ChunkFilterInput])
    def get(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id)
        # A plain dict: with a QueryDict DRF would read an absent boolean as False.
        filters = s.ChunkFilterInput(data=QueryValues(request.query_params.dict()))
        if not filters.is_valid():
            raise fail(CoreError.INVALID_FILTER, "chunks", errors="; ".join(f"{k}: {v[0]}" for k, v in filters.errors.items()),
                       extra={"fields": filters.errors})
        params = filters.validated_data
        qs = selectors.chunk_list(user=request.user, kb=kb)
        if "document" in params:
            qs = qs.filter(document_id=params["document"])
        if "type" in params:
            qs = qs.filter(chunk_type=params["type"])
        if "enabled" in params:
            qs = qs.filter(enabled=params["enabled"])
        if params.get("q"):
            qs = qs.filter(content__icontains=params["q"])
        with_tokens = params.get("include") == "tokens"
        # Never load the vectors (or the embedded text) for a list.
        deferred = ("embedding", "question_embedding", "enriched")
        qs = qs.defer(*deferred) if with_tokens else qs.defer(*deferred, "tokens")
        return self.paginated(qs, s.ChunkWithTokensOutput if with_tokens else s.ChunkOutput)


class ChunkDetailView(APIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(summary=_("A chunk, with its tokens on request"),
        responses=s.ChunkWithTokensOutput,
        parameters=[OpenApiParameter("include", str, enum=["tokens"], required=False)],
    )
    def get(self, request, kb_id: int, chunk_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id)
        chunk = selectors.chunk_get_for_user(user=request.user, kb=kb, chunk_id=chunk_id)
        include = request.query_params.get("include")
        if include not in (None, "tokens"):
            raise fail(CoreError.INVALID, extra={"fields": {"include": [gettext("Must be tokens, or left out.")]}})
        output = s.ChunkWithTokensOutput if include == "tokens" else s.ChunkOutput
        return Response(output(chunk).data)

    @extend_schema(request=s.ChunkUpdateInput, responses=s.ChunkOutput,
                   summary=_("Edit a chunk's text (re-embedded) or switch it on/off (editor)"))
    def patch(self, request, kb_id: int, chunk_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        chunk = selectors.chunk_get_for_user(user=request.user, kb=kb, chunk_id=chunk_id)
        data = parse(s.ChunkUpdateInput, request.data)
        if not data:
            raise fail(CoreError.NOTHING_TO_UPDATE, "chunk")
        chunk = chunk_update(chunk=chunk, content=data.get("content"), enabled=data.get("enabled"), user=request.user)
        return Response(s.ChunkOutput(chunk).data)
