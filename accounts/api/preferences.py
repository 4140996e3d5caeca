"""The caller's own preferences (``accounts.preferences``): ``GET``/``PUT /api/account/preferences/``, the knowledge
bases ticked on the chat page, kept server-side so that a reload or another browser finds them again."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.preferences import MAX_CHAT_KBS, chat_kbs_choose, chat_kbs_chosen
from core.api.fields import ItemList, StrictInput
from core.api.inputs import parse
from core.api.parsers import SafeJSONParser
from core.api.schema import errors
from knowledge.access import kbs_for_user


class PreferencesInput(StrictInput):
    chat_kb_ids = ItemList(child=serializers.IntegerField(min_value=1, max_value=2**31 - 1), max_length=MAX_CHAT_KBS,
                           help_text="The knowledge bases to tick on the chat page (those the caller cannot read are dropped)")


class PreferencesOutput(serializers.Serializer):
    chat_kb_ids = serializers.ListField(child=serializers.IntegerField(),
                                        help_text="Ticked on the chat page: the last choice, else the KBs the caller owns")


def _readable(user) -> list[int]:
    return list(kbs_for_user(user=user).order_by("name", "id").values_list("pk", flat=True)[:MAX_CHAT_KBS])


class PreferencesView(APIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(responses={200: PreferencesOutput}, summary=_("The caller's preferences (the chat page's KBs)"))
    def get(self, request):
        return Response({"chat_kb_ids": chat_kbs_chosen(user=request.user, readable=_readable(request.user))})

    @extend_schema(request=PreferencesInput, responses={200: PreferencesOutput, **errors(400)},
                   summary=_("Keep the caller's preferences (the chat page's KBs)"))
    def put(self, request):
        data = parse(PreferencesInput, request.data)
        return Response({"chat_kb_ids": chat_kbs_choose(user=request.user, kb_ids=data["chat_kb_ids"])})
