"""The web connector's error codes (sources/kinds/web.py), registered in the one registry (knowledge/errors.py).

``sources/errors.py`` imports every ``sources/kinds/*_errors.py``; the Chinese is in
``sources/locale/zh_Hans/LC_MESSAGES/web.po.part``. The connector fills the same templates in English for
``Failed.message`` and ``SourceError.message``; the runner stores the code and shows it translated.
"""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from django.utils.translation import override

from knowledge.errors import CODES, ValidationFailed, register

WEB_CODES = {
    "web_http_status": _("%(url)s answered HTTP %(status)s."),
    "web_too_large": _("%(url)s is larger than %(limit)s bytes; it was skipped."),
    "web_timeout": _("%(url)s did not answer within %(seconds)s s."),
    "web_too_many_redirects": _("%(url)s redirects more than %(limit)s times."),
    "web_fetch_failed": _("%(url)s could not be fetched: %(error)s"),
    "web_robots_refused": _("robots.txt of %(site)s does not allow fetching %(url)s."),
    "web_robots_unavailable": _("robots.txt of %(site)s could not be read (%(error)s); nothing was fetched."),
    "web_not_a_page": _("%(url)s is %(type)s, neither a web page, a sitemap nor a supported file."),
    "web_off_site": _("%(url)s redirects to another site (%(target)s)."),
}

for _code, _message in WEB_CODES.items():
    if _code not in CODES:   # imported once by sources/errors.py, perhaps again by a test
        register(_code, ValidationFailed, _message)


def text(code: str, **params) -> str:
    """The English message of ``code`` (the template untranslated), for Failed and SourceError."""
    with override("en"):
        return str(WEB_CODES[code]) % params
