"""The assistants' REST API under /api/: assistants, their keys, usage and share link, and KBs' retrieval keys.

Each view parses its input, calls one service of ``assistants.services`` (which checks the caller's
ownership in the query: another user's assistant or key is a 404) and serializes the result. A key is
in a response once, when it is created; lists give its prefix only.
"""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from assistants import serializers as s
from assistants.errors import AssistantsError
from assistants.keys import key_revoke, keys_of
from assistants.models import ApiKey, Assistant
from assistants.services import (
    assistant_create,
    assistant_delete,
    assistant_get_for_user,
    assistant_key_create,
    assistant_update,
    assistants_of,
    kb_key_create,
    share_token_rotate,
)
from assistants.usage import assistant_usage
from core.api.inputs import parse, parse_query
from core.api.pagination import PaginatedView
from core.api.schema import errors
from core.errors import CoreError, fail
from knowledge.models import Role
from knowledge.selectors import kb_get_for_user


def _output(assistant: Assistant) -> dict:
    return s.AssistantOutput(assistant).data


def _key_of(*, assistant: Assistant | None = None, kb=None, key_id: int) -> ApiKey:
    """A live key of this assistant or KB; any other id (another's key, a revoked one) is 404 ``key_not_found``."""
    key = keys_of(assistant=assistant, kb=kb).filter(pk=key_id).first()
    if key is None:
        raise fail(AssistantsError.KEY_NOT_FOUND)
    return key


def _created(row: ApiKey, key: str) -> Response:
    return Response(s.KeyCreatedOutput({**s.KeyOutput(row).data, "key": key}).data, status=status.HTTP_201_CREATED)


class AssistantListView(PaginatedView):
    @extend_schema(responses={200: s.AssistantOutput(many=True)}, summary=_("The caller's assistants, most recently changed first"))
    def get(self, request):
        return self.paginated(assistants_of(user=request.user), s.AssistantOutput)

    @extend_schema(request=s.AssistantInput, responses={201: s.AssistantOutput, **errors(404, 409)},
                   summary=_("Create an assistant over KBs the caller can read"),
                   description="A KB the caller cannot read is 404 `kb_not_found`; a name they already use is 409 "
                   "`assistant_name_taken`; a model that is not configured is 400 `unknown_answer_model`; a "
                   "confidence line under the gate is 400 `invalid_threshold`.")
    def post(self, request):
        data = dict(parse(s.AssistantInput, request.data))
        assistant = assistant_create(owner=request.user, name=data.pop("name"), kb_ids=data.pop("kb_ids"), **data)
        return Response(_output(assistant), status=status.HTTP_201_CREATED)


class AssistantDetailView(APIView):
    """One of the caller's assistants; anyone else's is a 404."""

    @extend_schema(summary=_("One of the caller's assistants"), responses={200: s.AssistantOutput, **errors(404)})
    def get(self, request, assistant_id: int):
        return Response(_output(assistant_get_for_user(user=request.user, assistant_id=assistant_id)))

    @extend_schema(request=s.AssistantInput(partial=True), responses={200: s.AssistantOutput, **errors(404, 409)},
                   summary=_("Change some of the assistant's settings (and its KBs, given kb_ids)"))
    def patch(self, request, assistant_id: int):
        assistant = assistant_get_for_user(user=request.user, assistant_id=assistant_id)
        data = dict(parse(s.AssistantInput, request.data, partial=True))
        if not data:
            raise fail(CoreError.NOTHING_TO_UPDATE)
        assistant = assistant_update(assistant=assistant, user=request.user, kb_ids=data.pop("kb_ids", None), **data)
        return Response(_output(assistant))

    @extend_schema(responses={204: None, **errors(404)},
                   summary=_("Delete the assistant with its keys and conversations"))
    def delete(self, request, assistant_id: int):
        assistant_delete(assistant=assistant_get_for_user(user=request.user, assistant_id=assistant_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class AssistantKeyListView(PaginatedView):
    @extend_schema(responses={200: s.KeyOutput(many=True), **errors(404)},
                   summary=_("The assistant's live keys (never the keys themselves)"))
    def get(self, request, assistant_id: int):
        assistant = assistant_get_for_user(user=request.user, assistant_id=assistant_id)
        return self.paginated(keys_of(assistant=assistant), s.KeyOutput)

    @extend_schema(request=s.KeyInput, responses={201: s.KeyCreatedOutput, **errors(404)},
                   summary=_("Issue a key of the assistant: the key is in this response only"))
    def post(self, request, assistant_id: int):
        assistant = assistant_get_for_user(user=request.user, assistant_id=assistant_id)
        data = parse(s.KeyInput, request.data)
        return _created(*assistant_key_create(user=request.user, assistant=assistant, **data))


class AssistantKeyDetailView(APIView):
    @extend_schema(responses={204: None, **errors(404)}, summary=_("Revoke one of the assistant's keys (at once)"))
    def delete(self, request, assistant_id: int, key_id: int):
        assistant = assistant_get_for_user(user=request.user, assistant_id=assistant_id)
        key_revoke(key=_key_of(assistant=assistant, key_id=key_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class AssistantUsageView(APIView):
    @extend_schema(parameters=[s.UsageQuery], responses={200: s.UsageOutput, **errors(404)},
                   summary=_("What the assistant was used for: conversations, questions, outcomes, ratings, tokens"))
    def get(self, request, assistant_id: int):
        assistant = assistant_get_for_user(user=request.user, assistant_id=assistant_id)
        since = parse_query(s.UsageQuery, request.query_params).get("since")
        return Response(s.UsageOutput({**assistant_usage(assistant, since=since), "since": since}).data)


class ShareRotateView(APIView):
    @extend_schema(request=None, responses={200: s.ShareRotatedOutput, **errors(404)},
                   summary=_("A new share link token: the old link stops working at once"))
    def post(self, request, assistant_id: int):
        assistant = assistant_get_for_user(user=request.user, assistant_id=assistant_id)
        token = share_token_rotate(assistant=assistant)
        return Response({"share_token": token, "share_path": s.share_path(assistant)})


class KBKeyListView(PaginatedView):
    """Read-only retrieval keys of a KB (MCP search, Dify's external knowledge), for its owners."""

    @extend_schema(responses={200: s.KeyOutput(many=True), **errors(403, 404)}, summary=_("The KB's live retrieval keys (owners)"))
    def get(self, request, kb_id: int):
        kb = kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.OWNER)
        return self.paginated(keys_of(kb=kb), s.KeyOutput)

    @extend_schema(request=s.KeyInput, responses={201: s.KeyCreatedOutput, **errors(403, 404)},
                   summary=_("Issue a retrieval key of the KB (owners): the key is in this response only"))
    def post(self, request, kb_id: int):
        data = parse(s.KeyInput, request.data)
        return _created(*kb_key_create(user=request.user, kb_id=kb_id, **data))


class KBKeyDetailView(APIView):
    @extend_schema(responses={204: None, **errors(403, 404)}, summary=_("Revoke one of the KB's retrieval keys (owners)"))
    def delete(self, request, kb_id: int, key_id: int):
        kb = kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.OWNER)
        key_revoke(key=_key_of(kb=kb, key_id=key_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
