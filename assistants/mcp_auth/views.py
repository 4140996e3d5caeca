"""The authorization server's and the resources' public documents and endpoints (django-oauth-toolkit's views).

Protected Resource Metadata (RFC 9728) for ``/mcp/`` and each ``/mcp/kb/<id>/``; Authorization Server Metadata
(RFC 8414); dynamic client registration (RFC 7591) narrowed to what the MCP specification's clients need and
nothing more: public clients (``token_endpoint_auth_method: none``), the authorization code (and its refresh),
redirect URIs on https or on the loopback interface over http (RFC 8252 §7.3; OAuth 2.1 §2.3.1), each one plain URI
(assistants/mcp_auth/redirects.py). Errors here are
the OAuth shape (``{"error", "error_description"}``, RFC 6749 §5.2 / RFC 7591 §3.2.2), as clients expect.
"""
from __future__ import annotations

import json
import time

from django.conf import settings
from django.db import transaction
from django.http import Http404, JsonResponse
from oauth2_provider.models import get_application_model
from oauth2_provider.views import OAuthProtectedResourceMetadataView, OAuthServerMetadataView, RevokeTokenView, TokenView
from oauth2_provider.views.dynamic_client_registration import (
    DynamicClientRegistrationManagementView,
    DynamicClientRegistrationView,
    _application_to_response,
    _issue_registration_token,
)

from assistants.mcp_auth.cors import cors
from assistants.mcp_auth.oauth import MCP_SCOPE
from assistants.mcp_auth.redirects import redirect_uri_problem
from assistants.mcp_auth.resources import mcp_target, origin_of_request, resource_url
from assistants.ratelimit import minute_count
from core.http.security import client_address

GRANT_TYPES = {"authorization_code", "refresh_token"}
MAX_REDIRECT_URIS = 10
MAX_NAME_CHARS = 255


class ResourceMetadata(OAuthProtectedResourceMetadataView):
    """RFC 9728 §3: ``/.well-known/oauth-protected-resource`` (``/mcp/``) and ``.../mcp/kb/<id>/``."""

    def get_resource(self, request):
        suffix = self.kwargs.get("resource_path")
        target = mcp_target("/" + suffix) if suffix else (True, None)
        if target is None:
            raise Http404
        return resource_url(origin_of_request(request), target[1])

    def get_scopes_supported(self):
        return [MCP_SCOPE]


def registration_problem(data: object) -> str:
    """Why a registration request is refused ("" when it is not); the metadata an MCP client sends passes."""
    if not isinstance(data, dict):
        return "the body must be a JSON object"
    name = data.get("client_name", "")
    if not isinstance(name, str) or len(name) > MAX_NAME_CHARS or "\x00" in name:
        return f"client_name must be a text of at most {MAX_NAME_CHARS} characters"
    method = data.get("token_endpoint_auth_method", "none")
    if method != "none":
        return "only public clients register here: token_endpoint_auth_method must be \"none\" (PKCE protects the code)"
    grants = data.get("grant_types", ["authorization_code", "refresh_token"])
    if not isinstance(grants, list) or "authorization_code" not in grants or not set(grants) <= GRANT_TYPES:
        return "grant_types may hold only authorization_code and refresh_token"
    if data.get("response_types", ["code"]) != ["code"]:
        return "response_types must be [\"code\"]"
    uris = data.get("redirect_uris")
    if not isinstance(uris, list) or not uris or len(uris) > MAX_REDIRECT_URIS:
        return f"redirect_uris must list 1 to {MAX_REDIRECT_URIS} URIs"
    return next((p for p in map(redirect_uri_problem, uris) if p), "")


class Registration(DynamicClientRegistrationView):
    """RFC 7591 §3.1, open to anyone (the MCP specification's clients register themselves), public clients only.

    The toolkit's own model check would refuse the loopback ``http`` redirect URIs native clients use (its
    ``ALLOWED_REDIRECT_URI_SCHEMES`` is https only, config/mcp_auth.py); ``registration_problem`` is the check here,
    and the client is saved with the toolkit's own registration token and answer."""

    def post(self, request, *args, **kwargs):
        # Open registration is bounded: each client address gets ZHIKU_MCP_REGISTRATIONS_PER_MINUTE a minute.
        now = time.time()
        limit = int(settings.ZHIKU_MCP_REGISTRATIONS_PER_MINUTE)
        if minute_count("mcpregister", client_address(request), int(now // 60)) > limit:
            retry = max(1, 60 - int(now % 60))
            answer = JsonResponse({"error": "temporarily_unavailable",
                                   "error_description": f"more than {limit} registrations a minute from this address; "
                                                        f"retry in {retry} s"}, status=429)
            answer["Retry-After"] = str(retry)
            return answer
        try:
            data = json.loads(request.body or b"null")
        except (ValueError, UnicodeDecodeError):
            data = None
        problem = registration_problem(data)
        if problem:
            return JsonResponse({"error": "invalid_redirect_uri" if "redirect_uri" in problem else "invalid_client_metadata",
                                 "error_description": problem}, status=400)
        application_model = get_application_model()
        application = application_model(
            user=None, registration_source=application_model.RegistrationSource.DCR, name=data.get("client_name", ""),
            redirect_uris=" ".join(data["redirect_uris"]), client_type=application_model.CLIENT_PUBLIC,
            authorization_grant_type=application_model.GRANT_AUTHORIZATION_CODE)
        with transaction.atomic():
            application.save()
            token = _issue_registration_token(application, None)
        return JsonResponse(_application_to_response(application, token, request), status=201)


server_metadata = cors("GET, OPTIONS")(OAuthServerMetadataView.as_view())
resource_metadata = cors("GET, OPTIONS")(ResourceMetadata.as_view())
# One transaction per token request: the Validator locks the person's row when it checks a refresh token or code and
# holds it until the new tokens are saved (assistants/mcp_auth/oauth.py, accounts/credentials.py).
token = cors("POST, OPTIONS")(transaction.atomic(TokenView.as_view()))
revoke = cors("POST, OPTIONS")(RevokeTokenView.as_view())
register = cors("POST, OPTIONS")(Registration.as_view())
# RFC 7592's read and delete; no update, which would bypass registration_problem (a client registers anew instead).
register_manage = cors("GET, DELETE, OPTIONS")(DynamicClientRegistrationManagementView.as_view(
    http_method_names=["get", "delete", "options"]))
