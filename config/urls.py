"""URL routes: admin, REST API (with OpenAPI schema and docs), pages."""
from csp.constants import SELF
from csp.decorators import csp_replace
from django.contrib import admin
from django.urls import include, path
from django.views.i18n import JavaScriptCatalog
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView

from accounts.token_pages import tokens_page


def favicon(request):
    """No icon: 204, cached a day. Browsers ask for /favicon.ico on their first request to a host, with no CSRF
    cookie yet; answered by the styled 404 page, whose forms mint a CSRF cookie, that response could land after the
    page's own and leave the page's tokens not matching the cookie (a 403 on its first POST)."""
    from django.http import HttpResponse

    response = HttpResponse(status=204)
    response["Cache-Control"] = "public, max-age=86400"
    return response


urlpatterns = [
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    # Sign-in: the password form, sign-out and single sign-on (accounts/urls.py).
    path("accounts/", include("accounts.urls")),
    # A signed-in person's own API tokens (accounts/token_pages.py).
    path("account/tokens/", tokens_page, name="api-tokens"),
    # MCP clients' OAuth 2.1 sign-in: the well-known documents, /oauth/ (authorize, token, register, revoke) and
    # revoking a sign-in from the tokens page (assistants/mcp_auth/; docs/integrations.md).
    path("", include("assistants.mcp_auth.urls")),
    # People, groups, invitations and each person's own page (accounts/pages/).
    path("", include("accounts.pages.urls")),
    # The language switch (POST to set_language) and the page scripts' message catalogue.
    path("i18n/", include("django.conf.urls.i18n")),
    path("jsi18n/", JavaScriptCatalog.as_view(), name="javascript-catalog"),
    path("api/", include("config.api_urls")),
    path("api/", include("chat.api_urls")),
    path("api/", include("assistants.api_urls")),
    path("api/", include("providers.api_urls")),
    path("api/", include("sources.api_urls")),
    path("api/", include("audit.api_urls")),
    path("api/", include("bots.api_urls")),
    path("api/", include("accounts.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's start-up script from a URL (?script), so the page needs no inline script (CSP).
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    # Redoc's bundle adds style elements as it loads, before it can be given the nonce, and runs its search
    # in a worker made from a blob: on this page alone, inline styles and blob: workers (scripts stay strict).
    path("api/redoc/", csp_replace({"style-src": [SELF, "'unsafe-inline'"], "worker-src": [SELF, "blob:"]})(
        SpectacularRedocView.as_view(url_name="schema")), name="api-redoc"),
    # The OpenAI-compatible API (/v1/) and Dify's external knowledge (/dify/retrieval), with API keys.
    path("", include("assistants.integration_urls")),
    path("", include("knowledge.urls")),
    path("", include("sources.urls")),
    path("", include("chat.urls")),
    # Share links (/s/<token>/) and the embedded chat (/embed/<id>.js, /embed/<id>/chat/): docs/integrations.md.
    path("", include("assistants.visitor_urls")),
    path("", include("assistants.urls")),
    path("", include("providers.urls")),
    # Chat bots: the Feishu, DingTalk and WeCom callbacks /bots/<kind>/<callback id>/ (docs/integrations.md).
    path("", include("bots.urls")),
    # The audit log: /audit/ and its CSV export (docs/audit.md).
    path("", include("audit.urls")),
]


# The error answers: JSON under /api/, the console's pages elsewhere (config/error_pages.py).
handler400 = "config.error_pages.bad_request"
handler403 = "config.error_pages.permission_denied"
handler404 = "config.error_pages.page_not_found"
handler500 = "config.error_pages.server_error"
