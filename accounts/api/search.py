"""The user picker's search: active people and groups by name, username or e-mail, for staff, KB owners and group
managers only (accounts/people/selectors.py: ``people_search``)."""
from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api import serializers as s
from accounts.people.selectors import KINDS, QUERY_MAX, people_search
from knowledge.api.schema import NON_SPACE, errors


class PeopleSearchView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("q", {"type": "string", "minLength": 1, "maxLength": QUERY_MAX, "pattern": NON_SPACE},
                             required=True, description="Part of a name, username or e-mail"),
            OpenApiParameter("kind", str, enum=list(KINDS), required=False, description="user, group or all (default)"),
        ],
        responses={200: s.SearchOutput, **errors(403)},
        summary="Find people and groups to pick (staff, KB owners, group managers)",
        description="At most ZHIKU_PEOPLE_SEARCH_LIMIT (10) of each; active accounts only; e-mail addresses "
                    "masked (a***@example.com) for anyone but staff.")
    def get(self, request):
        result = people_search(actor=request.user, q=request.query_params.get("q", ""),
                               kind=request.query_params.get("kind", "all"))
        staff = request.user.is_staff
        return Response({
            "users": [s.picked_user(u, staff=staff) for u in result.users],
            "groups": [{"id": g.pk, "name": g.name, "member_count": g.member_count} for g in result.groups],
        })
