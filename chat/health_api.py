"""The KB health API (owners): GET /api/kbs/<id>/health/ and its one-click actions (docs/health.md)."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from chat.golden import golden_json, golden_questions
from chat.health import SINCE_DAYS, health_report, label_add, owned_kb, since_clean
from chat.models import GoldenRun
from core.api.fields import StrictInput, Text
from knowledge.services.faq import MAX_ANSWER_CHARS, MAX_QUESTION_CHARS, faq_entry_add

RUNS_SHOWN = 20


class FAQInput(StrictInput):
    question = Text(max_length=MAX_QUESTION_CHARS, trim_whitespace=True)
    answer = Text(max_length=MAX_ANSWER_CHARS, trim_whitespace=True)


class LabelInput(StrictInput):
    question = Text(max_length=1000, trim_whitespace=True)
    chunk_id = serializers.IntegerField(min_value=1, max_value=2**63 - 1, help_text="The passage that answers the question")
    answer = Text(max_length=1000, trim_whitespace=True, required=False, allow_blank=True, default="",
                  help_text="The answer's text span (optional): the golden set scores answers on it")


class HealthView(APIView):
    @extend_schema(summary=_("The KB's health: questions not found or uncertain, the most asked, 👎 by reason (owner)"),
                   parameters=[OpenApiParameter("since", int, enum=list(SINCE_DAYS),
                                                description="Days to look back: 1, 7, 30 (default), 90 or 365")],
                   responses={200: dict})
    def get(self, request, kb_id: int):
        """Questions told not found or uncertain (grouped, with counts, last asked and the best passage found),
        the most-asked questions and the 👎 by reason, from the chat turns that searched this KB (owners only)."""
        kb = owned_kb(user=request.user, kb_id=kb_id)
        return Response(health_report(user=request.user, kb=kb, since_days=since_clean(request.query_params.get("since"))))


class HealthFAQView(APIView):
    @extend_schema(summary=_("Add a question and its answer as an FAQ entry (owner)"), request=FAQInput, responses={201: dict})
    def post(self, request, kb_id: int):
        """Add the question with the typed answer as an FAQ entry of the KB: searchable and answered at once."""
        kb = owned_kb(user=request.user, kb_id=kb_id)
        data = FAQInput(data=request.data)
        data.is_valid(raise_exception=True)
        chunk = faq_entry_add(kb=kb, user=request.user, **data.validated_data)
        return Response({"chunk_id": chunk.pk, "document_id": chunk.document_id, "question": data.validated_data["question"]},
                        status=status.HTTP_201_CREATED)


class HealthLabelView(APIView):
    @extend_schema(summary=_("Label the passage that answers a question, or add it to the golden set (owner)"),
                   request=LabelInput, responses={201: dict})
    def post(self, request, kb_id: int):
        """Label the passage that answers the question (a labelled question; with ``answer``, a golden one)."""
        kb = owned_kb(user=request.user, kb_id=kb_id)
        data = LabelInput(data=request.data)
        data.is_valid(raise_exception=True)
        labelled = label_add(user=request.user, kb=kb, **data.validated_data)
        return Response({"id": labelled.pk, "text": labelled.text, "relevant": list(labelled.relevant),
                         "answers": list(labelled.answers)}, status=status.HTTP_201_CREATED)


class HealthGoldenView(APIView):
    @extend_schema(summary=_("The golden questions' recent runs (owner)"), responses={200: dict})
    def get(self, request, kb_id: int):
        """The golden questions' recent runs (newest first, ``latest`` the newest): answer rate, drop, the change before."""
        kb = owned_kb(user=request.user, kb_id=kb_id)
        runs = [golden_json(r) for r in GoldenRun.objects.filter(kb=kb).order_by("-id")[:RUNS_SHOWN]]
        return Response({"questions": len(golden_questions(kb)), "latest": runs[0] if runs else None, "runs": runs})
