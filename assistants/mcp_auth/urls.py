"""The authorization server's routes, in the toolkit's namespace (``oauth2_provider``: its views reverse those
names) and at the site's root: RFC 8414 and RFC 9728 put the well-known documents at the origin."""
from __future__ import annotations

from django.urls import path, re_path

from assistants.mcp_auth import consent, grants, views

app_name = "oauth2_provider"

urlpatterns = [
    path(".well-known/oauth-authorization-server", views.server_metadata, name="oauth-server-metadata"),
    path(".well-known/oauth-protected-resource", views.resource_metadata, name="oauth-resource-metadata"),
    re_path(r"^\.well-known/oauth-protected-resource/(?P<resource_path>mcp(?:/kb/[1-9][0-9]{0,17})?/?)$",
            views.resource_metadata, name="oauth-resource-metadata-path"),
    path("oauth/authorize/", consent.Consent.as_view(), name="authorize"),
    path("oauth/token/", views.token, name="token"),
    path("oauth/revoke/", views.revoke, name="revoke-token"),
    path("oauth/register/", views.register, name="dcr-register"),
    path("oauth/register/<str:client_id>/", views.register_manage, name="dcr-register-management"),
    path("account/tokens/mcp/<int:grant_id>/revoke/", grants.revoke_view, name="mcp-grant-revoke"),
]
