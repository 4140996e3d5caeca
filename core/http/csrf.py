"""Why Django's CSRF check refused a request, in the active language (its own reasons are English only)."""
from __future__ import annotations

from django.middleware import csrf
from django.utils.translation import gettext_lazy as _

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
