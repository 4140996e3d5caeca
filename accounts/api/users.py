"""Staff manage accounts through the API: list and search, create, change flags and names, set a password or
issue a reset link (accounts/people/users.py). Anyone else is refused with 403 ``staff_required``."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api import serializers as s
from accounts.api.permissions import staff_only
from accounts.errors import AccountsError
from accounts.people.selectors import users_list
from accounts.people.users import user_create, user_reset_link, user_set_password, user_update
from core.api.inputs import parse
from core.api.pagination import PaginatedView
from core.api.parsers import SafeJSONParser
from core.api.schema import errors
from core.errors import CoreError, fail

USER_QUERY_MAX = 100  # characters of the people list's search text

User = get_user_model()


def user_for_staff(request, user_id: int):
    staff_only(request)
    user = User.objects.filter(pk=user_id).prefetch_related("sso_identities").first()
    if user is None:
        raise fail(AccountsError.PERSON_NOT_FOUND)
    return user


class UserListView(PaginatedView):
    parser_classes = [SafeJSONParser]

    @extend_schema(parameters=[OpenApiParameter("q", {"type": "string", "maxLength": USER_QUERY_MAX}, required=False,
                                                description="Part of a name, username or e-mail")],
                   responses={200: s.UserOutput(many=True), **errors(403)}, summary=_("Every account (staff)"))
    def get(self, request):
        staff_only(request)
        q = request.query_params.get("q", "")
        if len(q) > USER_QUERY_MAX:
            raise fail(CoreError.INVALID, extra={"fields": {"q": [gettext("At most %(limit)s characters.") % {"limit": USER_QUERY_MAX}]}})
        return self.paginated(users_list(q=q), s.UserOutput)

    @extend_schema(request=s.UserCreateInput, responses={201: s.UserOutput, **errors(403, 409)},
                   summary=_("Create an account (staff)"))
    def post(self, request):
        staff_only(request)
        user = user_create(**parse(s.UserCreateInput, request.data))
        return Response(s.UserOutput(user).data, status=status.HTTP_201_CREATED)


class UserDetailView(APIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(responses={200: s.UserOutput, **errors(403)}, summary=_("One account (staff)"))
    def get(self, request, user_id: int):
        return Response(s.UserOutput(user_for_staff(request, user_id)).data)

    @extend_schema(request=s.UserUpdateInput, responses={200: s.UserOutput, **errors(403, 409)},
                   summary=_("Deactivate or reactivate, change the staff flag, names or e-mail (staff)"),
                   description="Deactivating revokes every API token of the account. Nobody deactivates or "
                               "un-staffs themselves (409 `own_account`).")
    def patch(self, request, user_id: int):
        user = user_for_staff(request, user_id)
        data = parse(s.UserUpdateInput, request.data, partial=True)
        if not data:
            raise fail(CoreError.NOTHING_TO_UPDATE)
        user = user_update(actor=request.user, user=user, **data)
        return Response(s.UserOutput(user).data)


class UserPasswordView(APIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(request=s.PasswordInput, responses={200: s.PasswordOutput, **errors(403, 409, 502)},
                   summary=_("Set a new password, or issue a one-time reset link (staff)"),
                   description="Either way the account's API tokens are revoked once its password changes.")
    def post(self, request, user_id: int):
        user = user_for_staff(request, user_id)
        data = parse(s.PasswordInput, request.data)
        if data.get("password"):
            user_set_password(actor=request.user, user=user, password=data["password"])
            return Response({"reset_url": None, "sent": False})
        url = user_reset_link(actor=request.user, user=user, base_url=request.build_absolute_uri("/"),
                              send=data["send"])
        return Response({"reset_url": url, "sent": data["send"]})
