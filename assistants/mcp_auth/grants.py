"""The MCP clients a person let in, on their API tokens page, and revoking one (effective at the next request).

One sign-in is one live refresh token (its family: each refresh rotates it, RFC 9700 §4.14.2) and the access token
issued with it; revoking revokes the family and deletes its access tokens, and since every MCP request looks the
token up again (assistants/mcp_auth/bearer.py) the client is refused from its next request on.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST
from oauth2_provider.models import get_refresh_token_model

from assistants.errors import AssistantsError
from assistants.mcp_auth.oauth import MCP_SCOPE, target_of
from assistants.models import Assistant
from core.errors import message
from knowledge.models import KnowledgeBase

MAX_LISTED = 100


@dataclass(frozen=True)
class Grant:
    pk: int
    client: str
    kind: str
    target: str
    resource: str
    since: datetime
    expires: datetime


def _names(pairs: list[tuple[str, int]]) -> dict[tuple[str, int], str]:
    wanted = {kind: [pk for k, pk in pairs if k == kind] for kind in ("assistant", "kb")}
    names = {("assistant", pk): name for pk, name in
             Assistant.objects.filter(pk__in=wanted["assistant"]).values_list("pk", "name")}
    names.update({("kb", pk): name for pk, name in
                  KnowledgeBase.objects.filter(pk__in=wanted["kb"]).values_list("pk", "name")})
    return names


def grants_of(user) -> list[Grant]:
    """``user``'s live MCP sign-ins, newest first: client, what it reaches, the MCP address, since and expiry."""
    rows = list(get_refresh_token_model().objects.select_related("application", "access_token")
                .filter(user=user, revoked__isnull=True, access_token__isnull=False,
                        access_token__scope__contains=MCP_SCOPE).order_by("-created", "-id")[:MAX_LISTED])
    targets = {row.pk: target_of(row.access_token.scope) for row in rows}
    names = _names([t for t in targets.values() if t])
    found = []
    for row in rows:
        target = targets[row.pk]
        if target is None:
            continue
        found.append(Grant(pk=row.pk, client=row.application.name or row.application.client_id[:12], kind=target[0],
                           target=names.get(target, f"#{target[1]}"), resource=" ".join(row.resource or []),
                           since=row.created, expires=row.access_token.expires))
    return found


def grant_revoke(*, user, grant_id: int) -> bool:
    """Revoke ``user``'s sign-in ``grant_id`` and every token of its family; False when they hold no such one."""
    row = get_refresh_token_model().objects.filter(user=user, pk=grant_id, revoked__isnull=True).first()
    if row is None:
        return False
    if row.token_family:
        type(row).revoke_family(row.token_family)
    else:
        row.revoke()
    return True


@login_required
@require_POST
def revoke_view(request: HttpRequest, grant_id: int) -> HttpResponse:
    """The tokens page's revoke button (a form POST with the CSRF token); back to the page."""
    if not grant_revoke(user=request.user, grant_id=grant_id):
        return JsonResponse({"error": {"code": "mcp_grant_not_found", "message": message(AssistantsError.MCP_GRANT_NOT_FOUND)}},
                            status=404)
    return redirect("/account/tokens/#mcp-grants")
