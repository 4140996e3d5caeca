"""Invitations through the API: KB owners (for their KBs) and staff create one (its link in the answer, once),
list theirs (staff: all) and revoke one (accounts/people/invitations.py). Accepting is done at the link's page."""
from __future__ import annotations

from django.db import transaction
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api import serializers as s
from accounts.errors import AccountsError
from accounts.people import invitations as services
from core.api.inputs import parse
from core.api.pagination import PaginatedView
from core.api.parsers import SafeJSONParser
from core.api.schema import errors
from core.errors import fail
from knowledge.errors import KnowledgeError
from knowledge.models import KnowledgeBase


def invitation_url(request, token: str) -> str:
    return request.build_absolute_uri(reverse("invitation", kwargs={"token": token}))


def grants_from(roles: list[dict]) -> list[services.Grant]:
    """The grants of an input's ``roles``; a KB id that does not exist is 404 ``kb_not_found``."""
    kbs = KnowledgeBase.objects.in_bulk([r["kb_id"] for r in roles])
    if len(kbs) != len({r["kb_id"] for r in roles}):
        raise fail(KnowledgeError.KB_NOT_FOUND)
    return [services.Grant(kb=kbs[r["kb_id"]], role=r["role"]) for r in roles]


class InvitationListView(PaginatedView):
    parser_classes = [SafeJSONParser]

    @extend_schema(responses={200: s.InvitationOutput(many=True)},
                   summary=_("Invitations the caller made or that grant roles on a KB the caller owns (staff: all)"))
    def get(self, request):
        return self.paginated(services.invitations_visible(user=request.user), s.InvitationOutput)

    @extend_schema(request=s.InvitationCreateInput, responses={201: s.InvitationCreatedOutput, **errors(403, 404, 409, 502)},
                   summary=_("Invite someone: a one-time link that creates an account with these roles"),
                   description="Staff, or the owner of every knowledge base in `roles`. The link is in this answer "
                               "only; with `send`, it is also e-mailed to `email` (409 `email_not_configured` where "
                               "the site sends no e-mail).")
    def post(self, request):
        data = parse(s.InvitationCreateInput, request.data)
        with transaction.atomic():  # a link that could not be sent is not kept: nobody was shown it
            invitation, token = services.invitation_create(
                actor=request.user, grants=grants_from(data["roles"]), email=data.get("email", ""),
                days=data.get("expires_in_days"), note=data.get("note", ""))
            url = invitation_url(request, token)
            if data["send"]:
                services.invitation_send(invitation=invitation, url=url)
        invitation = services.invitations_visible(user=request.user).get(pk=invitation.pk)
        invitation.url, invitation.sent = url, data["send"]
        return Response(s.InvitationCreatedOutput(invitation).data, status=status.HTTP_201_CREATED)


class InvitationDetailView(APIView):
    @extend_schema(responses={200: s.InvitationOutput}, summary=_("One invitation (its maker, an owner of a KB it grants, or staff)"))
    def get(self, request, invitation_id: int):
        return Response(s.InvitationOutput(self._get(request, invitation_id)).data)

    @extend_schema(responses={204: None, **errors(410)}, summary=_("Withdraw an invitation not yet accepted"))
    def delete(self, request, invitation_id: int):
        services.invitation_revoke(invitation=self._get(request, invitation_id))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _get(self, request, invitation_id: int):
        invitation = services.invitations_visible(user=request.user).filter(pk=invitation_id).first()
        if invitation is None:
            raise fail(AccountsError.INVITATION_NOT_FOUND)
        return invitation
