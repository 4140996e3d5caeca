"""The error answers outside the REST views: 400, 403, 404, 500 and a refused CSRF check.

Under ``/api/`` they are the API's error shape (``{"error": {"code", "message"}}``, a registered code of
core/errors.py), so a client gets JSON whichever layer refused it; elsewhere they are the console's
pages (templates/400.html … 500.html, templates/csrf_failure.html) in the request's language, which
LocaleMiddleware has already activated. 403, 404 and the CSRF page extend base.html with the request's
context; 400 and 500 render without it (templates/errors/bare.html), as Django's own handlers do, so that
a broken session, database or URL configuration cannot break the error page itself.
"""
from __future__ import annotations

import logging

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.template import loader
from django.views import defaults

from core.errors import CODES
from core.http.csrf import csrf_reason

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"

def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX)


def _api_error(code: str, status: int, variant: str | None = None, **params) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": CODES[code].text(variant, **params)}}, status=status)


def bad_request(request: HttpRequest, exception=None) -> HttpResponse:
    if _is_api(request):
        return _api_error("bad_request", 400)
    return defaults.bad_request(request, exception, template_name="400.html")


def permission_denied(request: HttpRequest, exception=None) -> HttpResponse:
    if _is_api(request):
        return _api_error("permission_denied", 403)
    return defaults.permission_denied(request, exception, template_name="403.html")


def page_not_found(request: HttpRequest, exception=None) -> HttpResponse:
    if _is_api(request):
        return _api_error("not_found", 404)
    return defaults.page_not_found(request, exception, template_name="404.html")


def server_error(request: HttpRequest) -> HttpResponse:
    """Django's handler (500.html with no request context), JSON under /api/; Django's bare line if the page fails."""
    if _is_api(request):
        return _api_error("internal_error", 500, "server")
    try:
        return defaults.server_error(request, template_name="500.html")
    except Exception:  # the page itself is broken (a missing static manifest, say): still answer
        logger.exception("the 500 page could not be rendered")
        return HttpResponseServerError("<h1>Server Error (500)</h1>")


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """``CSRF_FAILURE_VIEW``: a form sent without its CSRF token or cookie (an expired page, blocked cookies)."""
    # CsrfViewMiddleware has logged the refusal and its reason (logger django.security.csrf).
    if _is_api(request):
        return _api_error("permission_denied", 403, "csrf", reason=csrf_reason(reason))
    body = loader.render_to_string("csrf_failure.html", {"reason": csrf_reason(reason) if settings.DEBUG else ""}, request=request)
    return HttpResponse(body, status=403)
