"""The web connector's error codes (sources/kinds/web.py), registered in the one registry (core/errors.py).

``sources/errors.py`` imports every ``sources/kinds/*_errors.py``. As for the protocol's own codes, the
registered message (translated: ``sources/locale/zh_Hans/LC_MESSAGES/web.po.part``) carries the
connector's English sentence — the URL, the status, the limit — as ``%(detail)s``
(core.errors.failure_text fills it); :func:`text` writes that sentence.
"""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import CODES, ErrorCode, ValidationFailed, register


class WebError(ErrorCode):
    """The web connector's codes."""

    WEB_HTTP_STATUS = "web_http_status"
    WEB_TOO_LARGE = "web_too_large"
    WEB_TIMEOUT = "web_timeout"
    WEB_TOO_MANY_REDIRECTS = "web_too_many_redirects"
    WEB_FETCH_FAILED = "web_fetch_failed"
    WEB_ROBOTS_REFUSED = "web_robots_refused"
    WEB_ROBOTS_UNAVAILABLE = "web_robots_unavailable"
    WEB_NOT_A_PAGE = "web_not_a_page"
    WEB_OFF_SITE = "web_off_site"


MESSAGES = {
    WebError.WEB_HTTP_STATUS: _("The page answered with an HTTP error: %(detail)s"),
    WebError.WEB_TOO_LARGE: _("The response is larger than the limit, so it was skipped: %(detail)s"),
    WebError.WEB_TIMEOUT: _("The site did not answer in time: %(detail)s"),
    WebError.WEB_TOO_MANY_REDIRECTS: _("The address redirects too many times: %(detail)s"),
    WebError.WEB_FETCH_FAILED: _("The page could not be fetched: %(detail)s"),
    WebError.WEB_ROBOTS_REFUSED: _("The site's robots.txt does not allow reading this address: %(detail)s"),
    WebError.WEB_ROBOTS_UNAVAILABLE: _("The site's robots.txt could not be read, so nothing was fetched: %(detail)s"),
    WebError.WEB_NOT_A_PAGE: _("The address is neither a web page, a sitemap nor a supported file: %(detail)s"),
    WebError.WEB_OFF_SITE: _("The address redirects to another site: %(detail)s"),
}

# The connector's own sentences (English, as SourceError.message and Failed.message).
DETAILS = {
    "web_http_status": "{url} answered HTTP {status}.",
    "web_too_large": "{url} is larger than {limit} bytes.",
    "web_timeout": "{url} did not answer within {seconds} s.",
    "web_too_many_redirects": "{url} redirects more than {limit} times.",
    "web_fetch_failed": "{url} could not be fetched ({error}).",
    "web_robots_refused": "robots.txt of {site} does not allow {url}.",
    "web_robots_unavailable": "robots.txt of {site}: {error}.",
    "web_not_a_page": "{url} is {type}.",
    "web_off_site": "{url} redirects to {target}.",
}

for _code, _message in MESSAGES.items():
    if _code not in CODES:
        register(_code, ValidationFailed, _message)


def text(code: str, **params) -> str:
    """The connector's English sentence for ``code``."""
    return DETAILS[code].format(**params)
