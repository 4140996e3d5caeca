"""Labels that teach (docs/relevance.md, *Learning from feedback*): the review queue and "this passage answers this
question", for a KB's editors and owners (a viewer gets 403, anyone else the KB's 404)."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.fields import StrictInput, Text
from core.api.pagination import PaginatedView
from core.api.schema import NON_SPACE
from knowledge import selectors
from knowledge.models import Chunk, EvalQuestion, LabelStatus, Role
from knowledge.services.labels import MAX_QUESTION_CHARS, label_passage, label_queue, label_review


class PassageLabelInput(StrictInput):
    question = Text(max_length=MAX_QUESTION_CHARS, trim_whitespace=True)
    chunk_id = serializers.IntegerField(min_value=1, max_value=2**63 - 1,
                                        help_text="A passage (chunk) of this KB")
    wrong = serializers.BooleanField(required=False, default=False,
                                     help_text="true: the passage does NOT answer the question (it is demoted for it)")


class PassageLabelOutput(serializers.ModelSerializer):
    created_by = serializers.CharField(source="created_by.get_username", default=None, read_only=True, allow_null=True)
    reviewed_by = serializers.CharField(source="reviewed_by.get_username", default=None, read_only=True, allow_null=True)
    passages = serializers.SerializerMethodField(help_text="The passages named (chunk id, document, text), wrong ones "
                                                 "with wrong: true; a chunk since deleted is left out")

    class Meta:
        model = EvalQuestion
        fields = ["id", "text", "status", "source", "chunk_ids", "negative_chunk_ids", "relevant", "answers",
                  "message_id", "created_by", "created_at", "reviewed_by", "reviewed_at", "passages"]
        read_only_fields = fields

    def get_passages(self, label: EvalQuestion) -> list[dict]:
        chunks = self.context.get("chunks", {})
        return [{"chunk_id": cid, "document_id": chunks[cid].document_id, "title": chunks[cid].document.title,
                 "content": chunks[cid].content[:300], "wrong": wrong}
                for ids, wrong in ((label.chunk_ids, False), (label.negative_chunk_ids, True)) for cid in ids
                if cid in chunks]


def _context(labels, kb) -> dict:
    """The chunks the labels name, in one query."""
    ids = {cid for label in labels for cid in [*label.chunk_ids, *label.negative_chunk_ids]}
    chunks = Chunk.objects.filter(kb=kb, pk__in=ids).select_related("document").only(
        "id", "content", "document_id", "document__title") if ids else []
    return {"chunks": {c.pk: c for c in chunks}}


class LabelListView(PaginatedView):
    @extend_schema(summary=_("The KB's labels of one status (the review queue by default)"),
                   parameters=[OpenApiParameter("status", str, enum=LabelStatus.values,
                                                description="pending (default: the review queue), confirmed or rejected"),
                               OpenApiParameter("question", {"type": "string", "minLength": 1, "maxLength": MAX_QUESTION_CHARS,
                                                            "pattern": NON_SPACE}, description="Only the labels of this question (the "
                                                "same once spaces, case, full-width forms and trailing punctuation are "
                                                "set aside); 1 to 1000 characters")],
                   responses={200: PassageLabelOutput(many=True)})
    def get(self, request, kb_id: int):
        """The KB's labels of one status, newest first (paginated): ``pending`` is the review queue of votes."""
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        qs = label_queue(kb=kb, status=request.query_params.get("status") or LabelStatus.PENDING,
                         question=request.query_params.get("question"))
        paginator = self.pagination_class()
        page: list[EvalQuestion] = paginator.paginate_queryset(qs, request, view=self) or []
        return paginator.get_paginated_response(PassageLabelOutput(page, many=True, context=_context(page, kb)).data)

    @extend_schema(summary=_("Label a passage as answering a question, or not (editor)"), request=PassageLabelInput,
                   responses={201: PassageLabelOutput})
    def post(self, request, kb_id: int):
        """This passage answers this question (``wrong``: does not): a confirmed label at once (hit testing)."""
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        data = PassageLabelInput(data=request.data)
        data.is_valid(raise_exception=True)
        label = label_passage(user=request.user, kb=kb, **data.validated_data)
        return Response(PassageLabelOutput(label, context=_context([label], kb)).data, status=status.HTTP_201_CREATED)


class _Review(APIView):
    confirm = True

    @extend_schema(request=None, responses={200: PassageLabelOutput})
    def post(self, request, kb_id: int, label_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        label = label_review(user=request.user, kb=kb, label_id=label_id, confirm=self.confirm)
        return Response(PassageLabelOutput(label, context=_context([label], kb)).data)


@extend_schema_view(post=extend_schema(summary=_("Confirm a label (editor)")))
class LabelConfirmView(_Review):
    """Confirm a label: it teaches this KB's ranking from now on (when the KB learns) and joins its evaluation."""

    confirm = True


@extend_schema_view(post=extend_schema(summary=_("Reject a label (editor)")))
class LabelRejectView(_Review):
    """Reject a label: it never teaches nor counts."""

    confirm = False
