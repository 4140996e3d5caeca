"""URL routes: admin, REST API (with OpenAPI schema and docs), pages."""
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.i18n import JavaScriptCatalog
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

urlpatterns = [
    path("admin/", admin.site.urls),
    # Sign-in for everyone (the admin's login admits staff only).
    path("accounts/login/", auth_views.LoginView.as_view(template_name="registration/login.html"), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # The language switch (POST to set_language) and the page scripts' message catalogue.
    path("i18n/", include("django.conf.urls.i18n")),
    path("jsi18n/", JavaScriptCatalog.as_view(), name="javascript-catalog"),
    path("api/", include("knowledge.api.urls")),
    path("api/", include("chat.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
    path("", include("knowledge.urls")),
    path("", include("chat.urls")),
]


def handler404(request, exception=None):
    """JSON for API paths (the error shape every API error uses), the normal page elsewhere."""
    from django.http import JsonResponse
    from django.utils.translation import gettext
    from django.views.defaults import page_not_found

    if request.path.startswith("/api/"):
        return JsonResponse({"error": {"code": "not_found", "message": gettext("Not found.")}}, status=404)
    return page_not_found(request, exception)
