"""REST endpoints for knowledge bases and their members: each parses its input, calls one service, serializes the result."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.inputs import parse
from core.api.pagination import PaginatedView
from core.api.parsers import SafeJSONParser
from core.api.schema import errors
from core.errors import CoreError, fail
from knowledge import access, selectors
from knowledge.api import serializers as s
from knowledge.errors import KnowledgeError
from knowledge.models import KnowledgeBase, Membership, Role
from knowledge.services.kbs import kb_create, kb_delete, kb_update, membership_remove, membership_set


def _kb_output(kb: KnowledgeBase, *, user) -> dict:
    annotated = selectors.kbs_with_caller_info(KnowledgeBase.objects.filter(pk=kb.pk), user=user).get()
    selectors.set_caller_role([annotated], user=user)
    return s.KBOutput(annotated).data


def _member_from(data: dict) -> tuple:
    """The user or the group (exactly one) a membership input names, by id or by name."""
    if sum(name in data for name in ("user_id", "username", "group_id", "group")) != 1:
        raise fail(KnowledgeError.USER_XOR_GROUP)
    user = group = None
    if "user_id" in data or "username" in data:
        lookup = {"pk": data["user_id"]} if "user_id" in data else {"username": data["username"]}
        user = get_user_model().objects.filter(**lookup).first()
        if user is None:
            raise fail(KnowledgeError.UNKNOWN_USER, name=str(data.get("username", data.get("user_id"))))
    else:
        lookup = {"pk": data["group_id"]} if "group_id" in data else {"name": data["group"]}
        group = Group.objects.filter(**lookup).first()
        if group is None:
            raise fail(KnowledgeError.UNKNOWN_GROUP, "one", name=str(data.get("group", data.get("group_id"))))
    return user, group


class KBListView(PaginatedView):
    parser_classes = [SafeJSONParser]

    @extend_schema(responses=s.KBOutput(many=True), summary=_("Knowledge bases the caller may read"))
    def get(self, request):
        qs = selectors.kbs_with_caller_info(access.kbs_for_user(user=request.user), user=request.user).order_by("id")
        return self.paginated(qs, s.KBOutput, prepare=lambda page: selectors.set_caller_role(page, user=request.user))

    @extend_schema(request=s.KBCreateInput, responses={201: s.KBOutput, **errors(409)},
                   summary=_("Create a knowledge base (the caller owns it)"))
    def post(self, request):
        data = parse(s.KBCreateInput, request.data)
        kb = kb_create(owner=request.user, **data)
        return Response(_kb_output(kb, user=request.user), status=status.HTTP_201_CREATED)


class KBDetailView(APIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(summary=_("A knowledge base the caller may read"), responses=s.KBOutput)
    def get(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id)
        return Response(_kb_output(kb, user=request.user))

    def _update(self, request, kb_id: int, *, partial: bool) -> Response:
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.OWNER)
        data = parse(s.KBUpdateInput, request.data, partial=partial)
        if not data:
            raise fail(CoreError.NOTHING_TO_UPDATE)
        kb = kb_update(kb=kb, **data)
        return Response(_kb_output(kb, user=request.user))

    @extend_schema(request=s.KBUpdateInput, responses={200: s.KBOutput, **errors(409)}, summary=_("Change the name or settings (owner)"))
    def patch(self, request, kb_id: int):
        return self._update(request, kb_id, partial=True)

    @extend_schema(request=s.KBUpdateInput, responses={200: s.KBOutput, **errors(409)}, summary=_("Change the name and settings (owner)"))
    def put(self, request, kb_id: int):
        return self._update(request, kb_id, partial=False)

    @extend_schema(responses={204: None}, summary=_("Delete the knowledge base and everything in it (owner)"))
    def delete(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.OWNER)
        kb_delete(kb=kb)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemberListView(PaginatedView):
    """Members are listed and changed by owners only: the list names people and groups."""

    parser_classes = [SafeJSONParser]

    @extend_schema(summary=_("The KB's members (owner)"), responses={200: s.MembershipOutput(many=True), **errors(403)})
    def get(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.OWNER)
        qs = Membership.objects.filter(kb=kb).select_related("user", "group").order_by("id")
        return self.paginated(qs, s.MembershipOutput)

    @extend_schema(request=s.MembershipCreateInput, responses={201: s.MembershipOutput},
                   summary=_("Give a user or a group a role (owner)"))
    def post(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.OWNER)
        data = parse(s.MembershipCreateInput, request.data)
        user, group = _member_from(data)
        membership = membership_set(kb=kb, role=data["role"], user=user, group=group)
        return Response(s.MembershipOutput(membership).data, status=status.HTTP_201_CREATED)


class MemberDetailView(APIView):
    parser_classes = [SafeJSONParser]

    def _membership(self, request, kb_id: int, membership_id: int) -> tuple[KnowledgeBase, Membership]:
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.OWNER)
        membership = Membership.objects.filter(kb=kb, pk=membership_id).select_related("user", "group").first()
        if membership is None:
            raise fail(KnowledgeError.MEMBERSHIP_NOT_FOUND)
        return kb, membership

    @extend_schema(request=s.MembershipUpdateInput, responses=s.MembershipOutput, summary=_("Change a member's role (owner)"))
    def patch(self, request, kb_id: int, membership_id: int):
        kb, membership = self._membership(request, kb_id, membership_id)
        data = parse(s.MembershipUpdateInput, request.data)
        membership = membership_set(kb=kb, role=data["role"], user=membership.user, group=membership.group)
        return Response(s.MembershipOutput(membership).data)

    @extend_schema(responses={204: None}, summary=_("Remove a member (owner)"))
    def delete(self, request, kb_id: int, membership_id: int):
        _kb, membership = self._membership(request, kb_id, membership_id)
        membership_remove(membership=membership)
        return Response(status=status.HTTP_204_NO_CONTENT)
