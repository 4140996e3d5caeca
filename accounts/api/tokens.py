"""The caller's own API tokens: create one (signed in), list them (never the keys), revoke one, revoke all (accounts/tokens.py)."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api import token_serializers as ts
from accounts.errors import AccountsError
from accounts.models import ApiToken
from accounts.tokens import DEFAULT_LIFETIME, token_issue, token_lifetime, token_revoke, tokens_live, tokens_revoke_all
from core.api.inputs import parse
from core.api.pagination import PaginatedView
from core.errors import CoreError, fail


def _current_id(request) -> int | None:
    """The id of the token this request was authenticated with (None: a session)."""
    return request.auth.pk if isinstance(request.auth, ApiToken) else None


class TokenListView(PaginatedView):
    @extend_schema(responses={200: ts.ApiTokenOutput(many=True)}, summary=_("The caller's live API tokens, newest first"))
    def get(self, request):
        current = _current_id(request)

        def mark(page):
            for token in page:
                token.current = token.pk == current

        return self.paginated(tokens_live(user=request.user), ts.ApiTokenOutput, prepare=mark)

    @extend_schema(request=ts.TokenCreateInput, responses={201: ts.TokenOutput}, summary=_("Create a token for the caller"),
                   description="For a signed-in session (the console's API tokens page, with its CSRF token); a request "
                   "made with a token is refused with 403 `permission_denied`, so a leaked key cannot mint longer-lived "
                   "ones (use `POST /api/auth/token/` with a username and password). The key is shown this once.")
    def post(self, request):
        if isinstance(request.auth, ApiToken):
            raise fail(CoreError.PERMISSION_DENIED, "token_create")
        data = parse(ts.TokenCreateInput, request.data)
        lifetime = token_lifetime(data["expires_in_days"]) if "expires_in_days" in data else DEFAULT_LIFETIME
        token, key = token_issue(user=request.user, name=data["name"], lifetime=lifetime)
        return Response(ts.TokenOutput({"token": key, "id": token.pk, "name": token.name, "key_prefix": token.key_prefix,
                                       "expiry": token.expiry}).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: ts.TokensRevokedOutput}, summary=_("Revoke every token of the caller"),
                   operation_id="auth_tokens_destroy_all")
    def delete(self, request):
        return Response({"revoked": tokens_revoke_all(user=request.user)})


class TokenDetailView(APIView):
    @extend_schema(request=None, responses={204: None}, summary=_("Revoke one of the caller's tokens"))
    def delete(self, request, token_id: int):
        if not token_revoke(user=request.user, token_id=token_id):
            raise fail(AccountsError.TOKEN_NOT_FOUND)
        return Response(status=status.HTTP_204_NO_CONTENT)
