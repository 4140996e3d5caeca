"""A KB's labelled questions and the evaluation run over them."""
from __future__ import annotations

from django.db import transaction
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from chat.errors import ChatError
from chat.evaluation import AnswerQuestion, answer_evaluate
from core.api.fields import ItemList, StrictInput, Text
from core.errors import fail
from knowledge import selectors
from knowledge.models import EvalQuestion, Role
from knowledge.retrieval.pipeline import MODES
from knowledge.services.calibration import schedule_recalibration, trade_off_curve
from knowledge.services.evaluation import LabelledQuery, evaluate
from knowledge.services.labels import labels_changed

MAX_QUESTIONS_PER_RUN = 500
# A chat turn costs far more than a search (an LLM call, when one is configured): answers are scored on fewer.
MAX_ANSWER_QUESTIONS = 100


class EvalQuestionInput(StrictInput):
    text = Text(max_length=1000)
    relevant = ItemList(child=Text(max_length=500), default=list, max_length=50)
    answers = ItemList(child=Text(max_length=1000), default=list, max_length=20,
                                    help_text="The answer's text spans (optional): evaluate with answers=true scores the chat's answers")


class EvalQuestionOutput(serializers.ModelSerializer):
    class Meta:
        model = EvalQuestion
        fields = ["id", "text", "relevant", "answers", "created_at"]


class EvaluateInput(StrictInput):
    mode = serializers.ChoiceField(choices=MODES, default="hybrid")
    top_k = serializers.IntegerField(min_value=1, max_value=50, default=10)
    answers = serializers.BooleanField(
        default=False, help_text=f"Also ask the first {MAX_ANSWER_QUESTIONS} questions as chat turns and score the answers "
                                 "(adds an `answers` object: answer_contains, citation_precision, not-found rates…)")


class EvalQuestionListView(APIView):
    @extend_schema(summary=_("The KB's labelled questions"), responses=EvalQuestionOutput(many=True))
    def get(self, request, kb_id: int):
        """The KB's labelled questions; a viewer does not see those naming a document they may not read."""
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id)
        questions = selectors.eval_question_list(user=request.user, kb=kb)[:MAX_QUESTIONS_PER_RUN]
        return Response(EvalQuestionOutput(questions, many=True).data)

    @extend_schema(summary=_("Add labelled questions (editor)"), request=EvalQuestionInput.many_init(max_length=MAX_QUESTIONS_PER_RUN),
                   responses={201: EvalQuestionOutput(many=True)})
    def post(self, request, kb_id: int):
        """Add one question ({text, relevant, answers}) or a list of them (at most as many as a KB holds)."""
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        many = isinstance(request.data, list)
        data = (EvalQuestionInput.many_init(data=request.data, max_length=MAX_QUESTIONS_PER_RUN) if many
                else EvalQuestionInput(data=request.data))
        data.is_valid(raise_exception=True)
        rows = data.validated_data if many else [data.validated_data]
        if kb.eval_questions.evaluated().count() + len(rows) > MAX_QUESTIONS_PER_RUN:
            raise fail(ChatError.TOO_MANY_QUESTIONS, limit=MAX_QUESTIONS_PER_RUN)
        with transaction.atomic():
            created = [EvalQuestion.objects.create(kb=kb, created_by=request.user, **row) for row in rows]
            schedule_recalibration(kb.pk)
        return Response(EvalQuestionOutput(created, many=True).data, status=status.HTTP_201_CREATED)


class EvalQuestionDetailView(APIView):
    @extend_schema(summary=_("Delete a labelled question (editor)"), request=None, responses={204: None})
    def delete(self, request, kb_id: int, question_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        deleted, _ = EvalQuestion.objects.filter(kb=kb, pk=question_id).delete()
        if not deleted:
            raise fail(ChatError.QUESTION_NOT_FOUND)
        labels_changed(kb_id=kb.pk)  # it may have taught the KB's ranking
        schedule_recalibration(kb.pk)
        return Response(status=status.HTTP_204_NO_CONTENT)


class EvaluateView(APIView):
    @extend_schema(summary=_("Run the KB's labelled questions through search (and chat, for answers) and score them"),
                   request=EvaluateInput, responses={200: dict})
    def post(self, request, kb_id: int):
        """Run the KB's labelled questions through search as the caller: recall, MRR, nDCG, not-found rates, latency.

        With ``answers: true`` the first questions are also asked as chat turns
        (as the chat page would, with the site's LLM or extractive) and the
        answers scored on their answer spans (``chat.evaluation``).
        """
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        data = EvaluateInput(data=request.data)
        data.is_valid(raise_exception=True)
        rows = list(selectors.eval_question_list(user=request.user, kb=kb))
        questions = [LabelledQuery(id=str(q.pk), text=q.text, relevant=list(q.relevant)) for q in rows]
        if not questions:
            raise fail(ChatError.NO_QUESTIONS)
        metrics = evaluate(user=request.user, kb_ids=[kb.pk], queries=questions, mode=data.validated_data["mode"],
                           top_k=data.validated_data["top_k"])
        # The trade-off of this run: per threshold, answerable questions kept and unanswerable ones rejected.
        answerable = {q.id for q in questions if q.relevant}
        per_query = metrics.get("per_query", [])
        metrics["trade_off"] = trade_off_curve(
            [r["relevance"] if r["relevance"] is not None else 0.0 for r in per_query if r["id"] in answerable],
            [r["relevance"] if r["relevance"] is not None else 0.0 for r in per_query if r["id"] not in answerable],
        )
        if data.validated_data["answers"]:
            metrics["answers"] = answer_evaluate(user=request.user, kb_ids=[kb.pk], questions=[
                AnswerQuestion(id=str(q.pk), text=q.text, relevant=list(q.relevant), answers=list(q.answers))
                for q in rows[:MAX_ANSWER_QUESTIONS]
            ])
        return Response(metrics)
