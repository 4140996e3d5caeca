"""django-oauth-toolkit fitted to MCP: the scope ``mcp`` plus the one target the consent page granted.

A token's scope is ``mcp assistant:<id>`` or ``mcp kb:<id>``: the authorization code carries it to the access token,
and a refresh to the next one (a refresh may only narrow a scope, RFC 6749 §6, and a token without its target is
refused at every MCP request). The target is what the person chose on the consent page
(assistants/mcp_auth/consent.py); what the token may read is still decided at each request by what that person may
read then (assistants/mcp_auth/bearer.py).
"""
from __future__ import annotations

import re

from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.scopes import SettingsScopes

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


class Validator(OAuth2Validator):
    """The toolkit's validator, with the target scopes allowed: ``mcp`` and at most one ``assistant:<id>`` or
    ``kb:<id>`` (whether the person may use it is the consent page's check, and every request's)."""

    def validate_scopes(self, client_id, scopes, client, request, *args, **kwargs):
        targets = [s for s in scopes if _TARGET.match(s)]
        return len(targets) <= 1 and all(s == MCP_SCOPE or _TARGET.match(s) for s in scopes)
