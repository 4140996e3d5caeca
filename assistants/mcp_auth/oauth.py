"""django-oauth-toolkit fitted to MCP: the scope ``mcp`` plus the one target the consent page granted.

A token's scope is ``mcp assistant:<id>`` or ``mcp kb:<id>``: the authorization code carries it to the access token,
and a refresh to the next one (a refresh may only narrow a scope, RFC 6749 §6, and a token without its target is
refused at every MCP request). The target is what the person chose on the consent page
(assistants/mcp_auth/consent.py); what the token may read is still decided at each request by what that person may
read then (assistants/mcp_auth/bearer.py).

The token endpoint issues nothing to a person who is no longer active, and nothing from a refresh token or code that
was revoked while the request was under way: their tokens end with their access (accounts/credentials.py).
"""
from __future__ import annotations

import re

from oauth2_provider.models import get_grant_model, get_refresh_token_model
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.scopes import SettingsScopes
from oauthlib.oauth2.rfc6749.errors import InvalidRedirectURIError

from accounts.credentials import holder_lock
from assistants.errors import AssistantsError
from assistants.mcp_auth.redirects import redirect_uri_problem
from core.errors import message

MCP_SCOPE = "mcp"
_TARGET = re.compile(r"^(assistant|kb):([1-9][0-9]{0,17})$")


def target_scope(kind: str, pk: int) -> str:
    return f"{kind}:{pk}"


def target_of(scopes: list[str] | str) -> tuple[str, int] | None:
    """The one ``(kind, id)`` target among ``scopes`` (a list or the space-separated text), None unless exactly one."""
    items = scopes.split() if isinstance(scopes, str) else scopes
    found = [m for m in (_TARGET.match(s) for s in items) if m]
    if len(found) != 1:
        return None
    return found[0][1], int(found[0][2])


class _Descriptions(dict):
    """Scope descriptions, a target scope described by its own name (the toolkit looks each requested one up)."""

    def __missing__(self, key: str) -> str:
        return key


class TargetScopes(SettingsScopes):
    def get_all_scopes(self):
        return _Descriptions(super().get_all_scopes())


def _holder_active(user) -> bool:
    """Whether ``user`` is active, their row locked until the token endpoint's transaction ends (it runs in one,
    assistants/mcp_auth/views.py): what they hold cannot be revoked between this check and the new tokens' issue."""
    return user is not None and holder_lock(user.pk, active=True)


def _refuse_unusable(redirect_uri: str, request) -> None:
    if redirect_uri_problem(redirect_uri):
        raise InvalidRedirectURIError(request=request, description=message(AssistantsError.CONSENT_REDIRECT_INVALID))


class Validator(OAuth2Validator):
    """The toolkit's validator, with the target scopes allowed: ``mcp`` and at most one ``assistant:<id>`` or
    ``kb:<id>`` (whether the person may use it is the consent page's check, and every request's), and tokens issued
    only to an active person. A refresh token or code of someone inactive is ``invalid_grant`` (RFC 6749 §5.2)."""

    def validate_scopes(self, client_id, scopes, client, request, *args, **kwargs):
        targets = [s for s in scopes if _TARGET.match(s)]
        return len(targets) <= 1 and all(s == MCP_SCOPE or _TARGET.match(s) for s in scopes)

    def validate_redirect_uri(self, client_id, redirect_uri, request, *args, **kwargs):
        """One of the client's URIs (the toolkit's check), and one registration takes now: a client registered before
        assistants/mcp_auth/redirects.py's rule may hold ``javascript:…``. Refused as a fatal error (RFC 6749
        §4.1.2.1): a page that says so, never a redirect there."""
        allowed = super().validate_redirect_uri(client_id, redirect_uri, request, *args, **kwargs)
        if allowed:
            _refuse_unusable(redirect_uri, request)
        return allowed

    def get_default_redirect_uri(self, client_id, request, *args, **kwargs):
        uri = super().get_default_redirect_uri(client_id, request, *args, **kwargs)
        if uri:
            _refuse_unusable(uri, request)
        return uri

    def validate_refresh_token(self, refresh_token, client, request, *args, **kwargs):
        """The toolkit's check, then the person's: active, and the refresh token still there once their row is
        locked (``holder_lock``: a password set or a deactivation deletes it under the same lock)."""
        if not super().validate_refresh_token(refresh_token, client, request, *args, **kwargs):
            return False
        held = get_refresh_token_model().objects.filter(pk=request.refresh_token_instance.pk)
        return _holder_active(request.user) and held.exists()

    def validate_code(self, client_id, code, client, request, *args, **kwargs):
        """As ``validate_refresh_token``, for an authorization code not yet exchanged."""
        if not super().validate_code(client_id, code, client, request, *args, **kwargs):
            return False
        return _holder_active(request.user) and get_grant_model().objects.filter(code=code, application=client).exists()
