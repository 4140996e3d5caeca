"""REST API for model endpoints (staff): list, create, change, delete, test the connection; the offered models (everyone)."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAdminUser
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.fields import ItemList, StrictInput, Text
from core.api.inputs import parse
from core.api.pagination import PaginatedView
from core.api.parsers import SafeJSONParser
from core.api.schema import errors
from core.errors import CoreError, fail
from providers.catalog import model_choices
from providers.errors import ProvidersError
from providers.models import MODEL_NAME_MAX, MODELS_MAX, NAME_MAX, ModelEndpoint
from providers.presets import EndpointKind
from providers.probe import endpoint_test
from providers.services import API_KEY_MAX, BASE_URL_MAX, default_model_set, endpoint_create, endpoint_delete, endpoint_update


class EndpointOutput(serializers.ModelSerializer):
    """An endpoint as staff see it: never its key, only whether one is set."""

    has_key = serializers.BooleanField(read_only=True, help_text="Whether a key is stored (it is never returned).")

    class Meta:
        model = ModelEndpoint
        fields = ["id", "name", "kind", "base_url", "model_names", "enabled", "has_key", "is_default", "default_model",
                  "created_at", "updated_at"]


class EndpointInput(StrictInput):
    name = Text(max_length=NAME_MAX, help_text="Unique; no slash.")
    kind = serializers.ChoiceField(choices=EndpointKind.choices, required=False, default=EndpointKind.OTHER)
    base_url = Text(max_length=BASE_URL_MAX, required=False, allow_blank=True, default="",
                    help_text="http(s) URL of the OpenAI-compatible API; blank: the kind's usual address.")
    api_key = Text(max_length=API_KEY_MAX, required=False, allow_blank=True, write_only=True, default="",
                   help_text="Stored encrypted, never returned. On a change, blank or absent keeps the stored key.")
    clear_key = serializers.BooleanField(required=False, default=False, help_text="On a change: remove the stored key.")
    model_names = ItemList(child=Text(max_length=MODEL_NAME_MAX), max_length=MODELS_MAX, required=False, default=list)
    enabled = serializers.BooleanField(required=False, default=True)


class EndpointTestInput(StrictInput):
    model = Text(max_length=MODEL_NAME_MAX, required=False, allow_blank=True, default="",
                 help_text="The model to ask for one token; blank: the endpoint's default or first model (none: list its models).")


class EndpointTestOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    code = serializers.CharField(help_text="Blank when ok; else endpoint_unreachable, endpoint_timeout, "
                                           "endpoint_unauthorized, endpoint_http_error, endpoint_bad_answer or invalid_api_key.")
    message = serializers.CharField()
    http_status = serializers.IntegerField(allow_null=True)
    model = serializers.CharField()
    models = serializers.ListField(child=serializers.CharField())
    elapsed_ms = serializers.IntegerField()


class ModelChoiceOutput(serializers.Serializer):
    choice = serializers.CharField(help_text="The value a KB's answer_model stores.")
    model = serializers.CharField()
    endpoint = serializers.CharField(allow_null=True, help_text="The console endpoint's name; null: the environment's.")
    is_default = serializers.BooleanField()


class ModelsOutput(serializers.Serializer):
    default = serializers.CharField(allow_null=True, help_text="The site's default choice; null: no language model.")
    results = ModelChoiceOutput(many=True)


class DefaultInput(StrictInput):
    choice = Text(max_length=NAME_MAX + 1 + MODEL_NAME_MAX, allow_blank=True,
                  help_text="A console endpoint's model choice; blank: the environment's ZHIKU_LLM_MODEL.")


def _endpoint(endpoint_id: int) -> ModelEndpoint:
    endpoint = ModelEndpoint.objects.filter(pk=endpoint_id).first()
    if endpoint is None:
        raise fail(ProvidersError.ENDPOINT_NOT_FOUND)
    return endpoint


class EndpointListView(PaginatedView):
    permission_classes = [IsAdminUser]
    parser_classes = [SafeJSONParser]

    @extend_schema(responses={200: EndpointOutput(many=True), **errors(403)}, summary=_("Model endpoints (staff)"))
    def get(self, request):
        return self.paginated(ModelEndpoint.objects.order_by("id"), EndpointOutput)

    @extend_schema(request=EndpointInput, responses={201: EndpointOutput, **errors(403, 409)},
                   summary=_("Add a model endpoint (staff); its key is stored encrypted"))
    def post(self, request):
        data = parse(EndpointInput, request.data)
        data.pop("clear_key")
        return Response(EndpointOutput(endpoint_create(**data)).data, status=status.HTTP_201_CREATED)


class EndpointDetailView(APIView):
    permission_classes = [IsAdminUser]
    parser_classes = [SafeJSONParser]

    @extend_schema(responses={200: EndpointOutput, **errors(403)}, summary=_("A model endpoint (staff)"))
    def get(self, request, endpoint_id: int):
        return Response(EndpointOutput(_endpoint(endpoint_id)).data)

    @extend_schema(request=EndpointInput(partial=True), responses={200: EndpointOutput, **errors(403, 409)},
                   summary=_("Change a model endpoint (staff); a blank api_key keeps the stored one"))
    def patch(self, request, endpoint_id: int):
        endpoint = _endpoint(endpoint_id)
        data = parse(EndpointInput, request.data, partial=True)
        if not data:
            raise fail(CoreError.NOTHING_TO_UPDATE)
        return Response(EndpointOutput(endpoint_update(endpoint=endpoint, **data)).data)

    @extend_schema(responses={204: None, **errors(403)}, summary=_("Delete a model endpoint (staff)"))
    def delete(self, request, endpoint_id: int):
        endpoint_delete(endpoint=_endpoint(endpoint_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class EndpointTestView(APIView):
    permission_classes = [IsAdminUser]
    parser_classes = [SafeJSONParser]

    @extend_schema(request=EndpointTestInput, responses={200: EndpointTestOutput, **errors(403)},
                   summary=_("Test the connection (staff): a one-token completion or the model list, through the openai SDK"))
    def post(self, request, endpoint_id: int):
        endpoint = _endpoint(endpoint_id)
        data = parse(EndpointTestInput, request.data)
        return Response(endpoint_test(endpoint=endpoint, model=data["model"]).as_dict())


def _models_output() -> dict:
    choices = model_choices()
    default = next((c.choice for c in choices if c.is_default), None)
    return {"default": default, "results": [{"choice": c.choice, "model": c.model, "endpoint": c.endpoint_name or None,
                                             "is_default": c.is_default} for c in choices]}


class ModelListView(APIView):
    @extend_schema(responses={200: ModelsOutput}, summary=_("The models a KB may answer with, and the site's default"))
    def get(self, request):
        return Response(_models_output())


class ModelDefaultView(APIView):
    permission_classes = [IsAdminUser]
    parser_classes = [SafeJSONParser]

    @extend_schema(request=DefaultInput, responses={200: ModelsOutput, **errors(403)},
                   summary=_("Choose the site's default model (staff)"))
    def put(self, request):
        default_model_set(choice=parse(DefaultInput, request.data)["choice"])
        return Response(_models_output())
