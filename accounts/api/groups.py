"""Groups through the API: staff create, rename and delete them and name managers; staff and a group's managers
list and change its members (accounts/people/groups.py). A group the caller may not open is a 404."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import Count, Q
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api import serializers as s
from accounts.api.permissions import staff_only
from accounts.errors import AccountsError
from accounts.models import GroupManager
from accounts.people import groups as services
from core.api.inputs import parse
from core.api.pagination import PaginatedView
from core.api.parsers import SafeJSONParser
from core.api.schema import errors
from core.errors import fail
from knowledge.errors import KnowledgeError

User = get_user_model()


def _counted(qs):
    return qs.annotate(member_count=Count("user", filter=Q(user__is_active=True))).select_related("sso")


def group_for(request, group_id: int) -> Group:
    group = _counted(services.groups_visible(user=request.user)).filter(pk=group_id).first()
    if group is None:
        raise fail(AccountsError.GROUP_NOT_FOUND)
    return group


def person_from(data) -> object:
    """The user an input names by ``user_id`` or ``username`` (exactly one)."""
    if ("user_id" in data) == ("username" in data):
        raise fail(AccountsError.PERSON_REQUIRED)
    lookup = {"pk": data["user_id"]} if "user_id" in data else {"username": data["username"]}
    user = User.objects.filter(**lookup).first()
    if user is None:
        raise fail(KnowledgeError.UNKNOWN_USER, name=str(data.get("username", data.get("user_id"))))
    return user


class GroupListView(PaginatedView):
    parser_classes = [SafeJSONParser]

    @extend_schema(responses={200: s.GroupOutput(many=True)}, summary=_("Groups the caller may open (all: staff; managed)"))
    def get(self, request):
        return self.paginated(_counted(services.groups_visible(user=request.user)).order_by("name", "id"), s.GroupOutput)

    @extend_schema(request=s.GroupInput, responses={201: s.GroupOutput, **errors(403, 409)}, summary=_("Create a group (staff)"))
    def post(self, request):
        staff_only(request)
        group = services.group_create(name=parse(s.GroupInput, request.data)["name"])
        return Response(s.GroupOutput(group_for(request, group.pk)).data, status=status.HTTP_201_CREATED)


class GroupDetailView(APIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(responses={200: s.GroupOutput}, summary=_("One group (staff, or its manager)"))
    def get(self, request, group_id: int):
        return Response(s.GroupOutput(group_for(request, group_id)).data)

    @extend_schema(request=s.GroupInput, responses={200: s.GroupOutput, **errors(403, 409)}, summary=_("Rename (staff)"))
    def patch(self, request, group_id: int):
        group = group_for(request, group_id)
        staff_only(request)
        services.group_rename(group=group, name=parse(s.GroupInput, request.data)["name"])
        return Response(s.GroupOutput(group_for(request, group_id)).data)

    @extend_schema(responses={204: None, **errors(403)}, summary=_("Delete (staff): the roles it held go with it"))
    def delete(self, request, group_id: int):
        group = group_for(request, group_id)
        staff_only(request)
        services.group_delete(group=group)
        return Response(status=status.HTTP_204_NO_CONTENT)


class GroupMemberListView(PaginatedView):
    parser_classes = [SafeJSONParser]

    @extend_schema(responses={200: s.PersonOutput(many=True)}, summary=_("A group's members (staff, or its manager)"))
    def get(self, request, group_id: int):
        group = group_for(request, group_id)
        return self.paginated(group.user_set.order_by("username", "id"), s.PersonOutput)

    @extend_schema(request=s.PersonRefInput, responses={201: s.PersonOutput, **errors(403, 409)},
                   summary=_("Add a member by user_id or username (staff, or its manager)"))
    def post(self, request, group_id: int):
        group = group_for(request, group_id)
        user = person_from(parse(s.PersonRefInput, request.data))
        services.group_member_add(group=group, user=user)
        return Response(s.PersonOutput(user).data, status=status.HTTP_201_CREATED)


class GroupMemberDetailView(APIView):
    @extend_schema(responses={204: None, **errors(409)}, summary=_("Remove a member (staff, or its manager)"))
    def delete(self, request, group_id: int, user_id: int):
        group = group_for(request, group_id)
        user = group.user_set.filter(pk=user_id).first()
        if user is None:
            raise fail(AccountsError.PERSON_NOT_FOUND)
        services.group_member_remove(group=group, user=user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class GroupManagerListView(PaginatedView):
    parser_classes = [SafeJSONParser]

    @extend_schema(responses={200: s.PersonOutput(many=True)}, summary=_("A group's managers (staff, or its manager)"))
    def get(self, request, group_id: int):
        group = group_for(request, group_id)
        return self.paginated(User.objects.filter(managed_groups__group=group).order_by("username", "id"), s.PersonOutput)

    @extend_schema(request=s.PersonRefInput, responses={201: s.PersonOutput, **errors(403)},
                   summary=_("Make someone a manager of the group (staff)"))
    def post(self, request, group_id: int):
        group = group_for(request, group_id)
        staff_only(request)
        user = person_from(parse(s.PersonRefInput, request.data))
        services.group_manager_add(group=group, user=user)
        return Response(s.PersonOutput(user).data, status=status.HTTP_201_CREATED)


class GroupManagerDetailView(APIView):
    @extend_schema(responses={204: None, **errors(403)}, summary=_("No longer a manager of the group (staff)"))
    def delete(self, request, group_id: int, user_id: int):
        group = group_for(request, group_id)
        staff_only(request)
        if not GroupManager.objects.filter(group=group, user_id=user_id).exists():
            raise fail(AccountsError.PERSON_NOT_FOUND)
        services.group_manager_remove(group=group, user=User(pk=user_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
