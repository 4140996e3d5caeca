"""The error answers outside the REST views: 400, 403, 404, 500 and a refused CSRF check.

Under ``/api/`` they are the API's error shape (``{"error": {"code", "message"}}``, a registered code of
knowledge/errors.py), so a client gets JSON whichever layer refused it; elsewhere they are the console's
pages (templates/400.html … 500.html, templates/csrf_failure.html) in the request's language, which
LocaleMiddleware has already activated. 403, 404 and the CSRF page extend base.html with the request's
context; 400 and 500 render without it (templates/errors/bare.html), as Django's own handlers do, so that
a broken session, database or URL configuration cannot break the error page itself.
"""
from __future__ import annotations

import logging

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.middleware import csrf
from django.template import loader
from django.utils.translation import gettext_lazy as _
from django.views import defaults

from knowledge.errors import CODES

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"

# The reasons of Django's CSRF middleware (English, untranslated there), in words for the API's messages.
_CSRF_REASONS = {
    csrf.REASON_NO_CSRF_COOKIE: _("the CSRF cookie is not set"),
    csrf.REASON_CSRF_TOKEN_MISSING: _("the CSRF token is missing"),
    csrf.REASON_NO_REFERER: _("the request has no Referer"),
    csrf.REASON_MALFORMED_REFERER: _("the Referer is malformed"),
    csrf.REASON_INSECURE_REFERER: _("the Referer is insecure while the site is secure"),
}
_CSRF_REASON_PREFIXES = {
    "CSRF token from ": _("the CSRF token is wrong or out of date"),
    "Origin checking failed": _("the request's Origin is not one of the site's trusted origins"),
    "Referer checking failed": _("the request's Referer is not one of the site's trusted origins"),
}


def csrf_reason(reason: str) -> str:
    """Django's CSRF failure ``reason`` in the active language (an unknown one as it is)."""
    if reason in _CSRF_REASONS:
        return str(_CSRF_REASONS[reason])
    for prefix, text in _CSRF_REASON_PREFIXES.items():
        if reason.startswith(prefix):
            return str(text)
    return reason


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
    except Exception:  # noqa: BLE001 - the page itself is broken (a missing static manifest, say): still answer
        logger.exception("the 500 page could not be rendered")
        return HttpResponseServerError("<h1>Server Error (500)</h1>")


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """``CSRF_FAILURE_VIEW``: a form sent without its CSRF token or cookie (an expired page, blocked cookies)."""
    # CsrfViewMiddleware has logged the refusal and its reason (logger django.security.csrf).
    if _is_api(request):
        return _api_error("permission_denied", 403, "csrf", reason=csrf_reason(reason))
    body = loader.render_to_string("csrf_failure.html", {"reason": csrf_reason(reason) if settings.DEBUG else ""}, request=request)
    return HttpResponse(body, status=403)
