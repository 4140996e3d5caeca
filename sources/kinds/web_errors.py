"""The web connector's error codes (sources/kinds/web.py), registered in the one registry (core/errors.py).

``sources/errors.py`` imports every ``sources/kinds/*_errors.py``. As for the protocol's own codes, the
registered message (translated: ``sources/locale/zh_Hans/LC_MESSAGES/web.po.part``) carries the
connector's English sentence — the URL, the status, the limit — as ``%(detail)s``
(sources/services/errors.py fills it); :func:`text` writes that sentence.
"""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import CODES, ValidationFailed, register

MESSAGES = {
    "web_http_status": _("The page answered with an HTTP error: %(detail)s"),
    "web_too_large": _("The response is larger than the limit, so it was skipped: %(detail)s"),
    "web_timeout": _("The site did not answer in time: %(detail)s"),
    "web_too_many_redirects": _("The address redirects too many times: %(detail)s"),
    "web_fetch_failed": _("The page could not be fetched: %(detail)s"),
    "web_robots_refused": _("The site's robots.txt does not allow reading this address: %(detail)s"),
    "web_robots_unavailable": _("The site's robots.txt could not be read, so nothing was fetched: %(detail)s"),
    "web_not_a_page": _("The address is neither a web page, a sitemap nor a supported file: %(detail)s"),
    "web_off_site": _("The address redirects to another site: %(detail)s"),
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
