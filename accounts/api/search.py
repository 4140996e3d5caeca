"""The user picker's search: active people and groups by name, username or e-mail, for staff, KB owners and group
managers only (accounts/people/selectors.py: ``people_search``)."""
from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.throttling import UserRateThrottle
from rest_framework.views import APIView

from accounts.api import serializers as s
from accounts.people.selectors import KINDS, QUERY_MAX, people_search
from core.api.schema import NON_SPACE, errors


class PeopleSearchThrottle(UserRateThrottle):
    """ZHIKU_PEOPLE_SEARCH_RATE searches a minute per person (staff unlimited), counted in the cache (Redis
    where configured, so shared by every worker); a cache that fails lets the search through."""

    scope = "people_search"

    def get_rate(self):
        return settings.ZHIKU_PEOPLE_SEARCH_RATE

    def allow_request(self, request, view):
        if request.user.is_authenticated and request.user.is_staff:
            return True
        try:
            return super().allow_request(request, view)
        except Exception:  # noqa: BLE001 - any cache failure (Redis down, timeout)
            return True


class PeopleSearchView(APIView):
    throttle_classes = [PeopleSearchThrottle]

    @extend_schema(
        parameters=[
            OpenApiParameter("q", {"type": "string", "minLength": 1, "maxLength": QUERY_MAX, "pattern": NON_SPACE},
                             required=True, description="Part of a name or username, or a whole e-mail address (staff: part of one)"),
            OpenApiParameter("kind", str, enum=list(KINDS), required=False, description="user, group or all (default)"),
        ],
        responses={200: s.SearchOutput, **errors(403, 429)},
        summary=_("Find people and groups to pick (staff, KB owners, group managers)"),
        description="At most ZHIKU_PEOPLE_SEARCH_LIMIT (10) of each; active accounts only; e-mail addresses "
                    "masked (a***@example.com) for anyone but staff, who alone match part of an address; "
                    "ZHIKU_PEOPLE_SEARCH_RATE (30/min) searches a minute for anyone but staff (429 `throttled`).")
    def get(self, request):
        result = people_search(actor=request.user, q=request.query_params.get("q", ""),
                               kind=request.query_params.get("kind", "all"))
        staff = request.user.is_staff
        return Response({
            "users": [s.picked_user(u, staff=staff) for u in result.users],
            "groups": [{"id": g.pk, "name": g.name, "member_count": g.member_count} for g in result.groups],
        })
