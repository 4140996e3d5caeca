"""MCP clients' sign-in: the platform as an OAuth 2.1 authorization server (django-oauth-toolkit) for ``/mcp/``.

The MCP authorization specification (2025-06-18 and later) has an MCP server be an OAuth 2.1 protected resource:
it publishes Protected Resource Metadata (RFC 9728), its authorization server publishes its metadata (RFC 8414)
and lets clients register themselves (RFC 7591), and tokens are bound to the resource they were asked for
(RFC 8707). The code is assistants/mcp_auth/; how a client signs in: docs/integrations.md "Signing in with OAuth".
"""
from __future__ import annotations

import os

from core.env import env_int

# Origins (scheme://host[:port], exact, comma-separated) whose browser pages may call /mcp/, the well-known
# documents and the token endpoints (CORS). Empty: none; an origin not listed gets no CORS headers at all.
ZHIKU_MCP_CORS_ORIGINS = tuple(o.strip().rstrip("/") for o in os.environ.get("ZHIKU_MCP_CORS_ORIGINS", "").split(",")
                               if o.strip())
# Lifetimes (seconds) of an access token (each MCP request re-checks it; a refresh brings a new one) and of a refresh
# token (rotated at each use: the old one stops working).
ZHIKU_MCP_TOKEN_SECONDS = env_int("ZHIKU_MCP_TOKEN_SECONDS", 3600)
ZHIKU_MCP_REFRESH_SECONDS = env_int("ZHIKU_MCP_REFRESH_SECONDS", 30 * 24 * 3600)
# Client registrations (open, RFC 7591) a client address may make a minute; past it 429 with Retry-After.
ZHIKU_MCP_REGISTRATIONS_PER_MINUTE = env_int("ZHIKU_MCP_REGISTRATIONS_PER_MINUTE", 10)

OAUTH2_PROVIDER = {
    # One scope: the MCP tools. The consent page adds the one target the person chose (assistant:<id> or
    # kb:<id>; assistants/mcp_auth/oauth.py), which a refresh carries over as it carries every granted scope.
    "SCOPES": {"mcp": "Use the MCP tools of one assistant or knowledge base"},
    "DEFAULT_SCOPES": ["mcp"],
    "SCOPES_BACKEND_CLASS": "assistants.mcp_auth.oauth.TargetScopes",
    "OAUTH2_VALIDATOR_CLASS": "assistants.mcp_auth.oauth.Validator",
    # OAuth 2.1 (draft-ietf-oauth-v2-1) and RFC 9700: the authorization code with PKCE S256 only; no implicit
    # grant, no password grant, no plain PKCE, no token in a query string; tokens stored as their SHA-256 only;
    # the authorization response names its issuer (RFC 9207).
    "PKCE_REQUIRED": True,
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none"],
    # Refresh tokens rotate, and a refresh token used twice revokes its whole family (RFC 9700 §4.14.2).
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "ACCESS_TOKEN_EXPIRE_SECONDS": ZHIKU_MCP_TOKEN_SECONDS,
    "REFRESH_TOKEN_EXPIRE_SECONDS": ZHIKU_MCP_REFRESH_SECONDS,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 120,
    # Dynamic client registration (RFC 7591), open as the MCP specification prefers; only public clients with
    # https or loopback redirect URIs pass (assistants/mcp_auth/views.py).
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    # https redirects, and plain http only to the loopback interface, where a native client listens (RFC 8252 §7.3),
    # on any port, localhost included: the registration and the consent page allow those (assistants/mcp_auth/).
    "ALLOWED_REDIRECT_URI_SCHEMES": ["https"],
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_SCHEME": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "REQUEST_APPROVAL_PROMPT": "force",
    "OAUTH2_PROTECTED_RESOURCE_NAME": "知库 zhiku MCP",
}
