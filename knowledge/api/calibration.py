"""A KB's judge calibration and its operating point: GET (viewer), POST recalibrate (owner), PATCH threshold (owner)."""
from __future__ import annotations

from django.utils.translation import gettext
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from knowledge import selectors
from knowledge.api.schema import errors
from knowledge.api.serializers import StrictInput, _finite
from knowledge.errors import Conflict, ValidationFailed
from knowledge.models import CalibrationStatus, JudgeCalibration, Role
from knowledge.services.calibration import calibration_payload, schedule_recalibration, threshold_for_rejection
from knowledge.services.kbs import kb_update


class CurvePoint(serializers.Serializer):
    threshold = serializers.FloatField()
    answerable_kept = serializers.FloatField(allow_null=True)
    unanswerable_rejected = serializers.FloatField(allow_null=True)
    answerable_kept_count = serializers.IntegerField()
    unanswerable_rejected_count = serializers.IntegerField()


class CalibrationOutput(serializers.Serializer):
    status = serializers.ChoiceField(choices=["none", *CalibrationStatus.values])
    source = serializers.CharField(help_text='"labelled", "self" or "" (never calibrated)')
    slope = serializers.FloatField()
    offset = serializers.FloatField()
    threshold = serializers.FloatField(help_text="The KB's operating point (score_threshold)")
    answerable = serializers.IntegerField()
    unanswerable = serializers.IntegerField()
    curve = CurvePoint(many=True)
    kb_version = serializers.IntegerField(allow_null=True)
    updated_at = serializers.DateTimeField(allow_null=True)
    error = serializers.CharField(allow_blank=True)


class OperatingPointInput(StrictInput):
    threshold = serializers.FloatField(required=False, min_value=0, max_value=1, validators=[_finite])
    target_rejection = serializers.FloatField(required=False, min_value=0, max_value=1, validators=[_finite])


class CalibrationView(APIView):
    @extend_schema(responses=CalibrationOutput, summary="The KB's judge calibration and trade-off curve (viewer)")
    def get(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id)
        return Response(calibration_payload(kb))

    @extend_schema(request=None, responses={202: CalibrationOutput}, summary="Recalibrate the judge now (owner)")
    def post(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.OWNER)
        schedule_recalibration(kb.pk, auto=False)
        kb.refresh_from_db()
        return Response(calibration_payload(kb), status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        request=OperatingPointInput,
        responses={200: CalibrationOutput, **errors(409)},
        summary="Set the operating point: a threshold, or the lowest one that rejects a share of unanswerable questions (owner)",
    )
    def patch(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.OWNER)
        data = OperatingPointInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        if len(values) != 1:
            raise ValidationFailed(gettext("Give exactly one of threshold or target_rejection."), code="threshold_or_target")
        if "threshold" in values:
            threshold = values["threshold"]
        else:
            row = JudgeCalibration.objects.filter(kb=kb, status=CalibrationStatus.READY).first()
            if row is None or not row.curve:
                raise Conflict(gettext("The KB has no ready calibration to pick a threshold from; POST .../calibration/ first."),
                               code="not_calibrated")
            threshold = threshold_for_rejection(row.curve, values["target_rejection"])
            if threshold is None:
                raise ValidationFailed(gettext("No threshold on the curve rejects that share of unanswerable questions."),
                                       code="target_unreachable")
        kb = kb_update(kb=kb, score_threshold=threshold)
        return Response(calibration_payload(kb))
