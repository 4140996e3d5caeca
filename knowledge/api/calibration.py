"""A KB's judge calibration and its two lines: GET (viewer), POST recalibrate (owner), PATCH the gate and/or line (owner)."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.fields import Rule, StrictInput, at_most_one, finite
from core.api.schema import errors
from core.errors import fail
from knowledge import selectors
from knowledge.errors import KnowledgeError
from knowledge.models import CalibrationStatus, JudgeCalibration, Role
from knowledge.services.calibration import schedule_recalibration
from knowledge.services.calibration_results import calibration_payload, threshold_for_kept, threshold_for_rejection
from knowledge.services.kbs import kb_update


class CurvePoint(serializers.Serializer):
    threshold = serializers.FloatField()
    answerable_kept = serializers.FloatField(allow_null=True)
    unanswerable_rejected = serializers.FloatField(allow_null=True)
    unanswerable_answered = serializers.FloatField(allow_null=True, required=False)
    answerable_kept_count = serializers.IntegerField()
    unanswerable_rejected_count = serializers.IntegerField()


class CalibrationOutput(serializers.Serializer):
    status = serializers.ChoiceField(choices=["none", *CalibrationStatus.values])
    source = serializers.CharField(  # type: ignore[assignment]  # the output's field "source", not Field.source
        help_text='"labelled", "self" or "" (never calibrated)')
    slope = serializers.FloatField()
    offset = serializers.FloatField()
    threshold = serializers.FloatField(help_text="The KB's not-found gate (score_threshold)")
    answer_threshold = serializers.FloatField(help_text="The KB's confidence line (answer_threshold)")
    outcomes = serializers.DictField(help_text="At the two lines: the share answered / uncertain / not_found of the "
                                               "calibration's answerable and of its unanswerable questions")
    answerable = serializers.IntegerField()
    unanswerable = serializers.IntegerField()
    curve = CurvePoint(many=True)
    kb_version = serializers.IntegerField(allow_null=True)
    updated_at = serializers.DateTimeField(allow_null=True)
    error = serializers.CharField(allow_blank=True, help_text="Why the last fit failed, in the reader's language.")
    error_code = serializers.CharField(allow_blank=True, help_text="Its registered code (docs/api.md), or \"\".")


class OperatingPointInput(StrictInput):
    threshold = serializers.FloatField(required=False, min_value=0, max_value=1, validators=[finite],
                                       help_text="the not-found gate")
    target_rejection = serializers.FloatField(required=False, min_value=0, max_value=1, validators=[finite],
                                              help_text="the gate: the lowest threshold that rejects this share of unanswerable questions")
    target_kept = serializers.FloatField(required=False, min_value=0, max_value=1, validators=[finite],
                                         help_text="the gate: the highest threshold that keeps this share of answerable questions")
    answer_threshold = serializers.FloatField(required=False, min_value=0, max_value=1, validators=[finite],
                                              help_text="the confidence line")
    answer_target_rejection = serializers.FloatField(
        required=False, min_value=0, max_value=1, validators=[finite],
        help_text="the line: the lowest threshold under which this share of unanswerable questions stays (not answered)")

    rules = (Rule("threshold_or_target", "At most one of threshold, target_rejection or target_kept (the gate), at most "
                  "one of answer_threshold or answer_target_rejection (the line), and at least one of them all.",
                  {"allOf": [at_most_one("threshold", "target_rejection", "target_kept"),
                             at_most_one("answer_threshold", "answer_target_rejection"),
                             {"anyOf": [{"required": [name]} for name in ("threshold", "target_rejection", "target_kept",
                                                                          "answer_threshold", "answer_target_rejection")]}]},
                  body_required=True),
             Rule("invalid_threshold", "The line (answer_threshold, or the one a target picks) is at least the gate "
                  "(threshold, or the one a target picks; the KB's own where only one is moved)."))


class CalibrationView(APIView):
    @extend_schema(responses=CalibrationOutput, summary=_("The KB's judge calibration and trade-off curve (viewer)"))
    def get(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id)
        return Response(calibration_payload(kb))

    @extend_schema(request=None, responses={202: CalibrationOutput}, summary=_("Recalibrate the judge now (owner)"))
    def post(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.OWNER)
        schedule_recalibration(kb.pk, auto=False)
        kb.refresh_from_db()
        return Response(calibration_payload(kb), status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        request=OperatingPointInput,
        responses={200: CalibrationOutput, **errors(409)},
        summary=_("Move the not-found gate and/or the confidence line: a value, or a share read off the curve (owner)"),
    )
    def patch(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.OWNER)
        data = OperatingPointInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        gate_keys = [k for k in ("threshold", "target_rejection", "target_kept") if k in values]
        line_keys = [k for k in ("answer_threshold", "answer_target_rejection") if k in values]
        if len(gate_keys) > 1 or len(line_keys) > 1 or not (gate_keys or line_keys):
            raise fail(KnowledgeError.THRESHOLD_OR_TARGET)
        curve: list[dict] = []  # read only for a target, and then set below
        if any(k.startswith("target") or k == "answer_target_rejection" for k in (*gate_keys, *line_keys)):
            row = JudgeCalibration.objects.filter(kb=kb, status=CalibrationStatus.READY).first()
            if row is None or not row.curve:
                raise fail(KnowledgeError.NOT_CALIBRATED)
            curve = row.curve
        changes = {}
        if gate_keys:
            key = gate_keys[0]
            changes["score_threshold"] = values[key] if key == "threshold" else (
                threshold_for_rejection(curve, values[key]) if key == "target_rejection" else threshold_for_kept(curve, values[key]))
        if line_keys:
            key = line_keys[0]
            changes["answer_threshold"] = values[key] if key == "answer_threshold" else threshold_for_rejection(curve, values[key])
        if any(v is None for v in changes.values()):
            raise fail(KnowledgeError.TARGET_UNREACHABLE)
        kb = kb_update(kb=kb, **changes)
        return Response(calibration_payload(kb))
