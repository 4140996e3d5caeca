"""daphne leaves POST bodies to the application: Twisted does not parse them as forms first.

Twisted's ``http.Request`` parses every POST body with a form content type before daphne sees
the request (into ``request.args``, which daphne never reads). A multipart body it cannot parse
(an empty form, no boundary, a missing closing line) makes Twisted answer a bare
``400 Bad Request`` itself, so the API could not answer in its error shape; and a well-formed
upload was parsed once by Twisted and once by Django, each copy in memory. Twisted's request
takes ``parsePOSTFormSubmission=False`` to skip that step; daphne never passes it, so
``skip_form_parsing`` sets it on every request daphne makes. Django then reads the body once,
and a malformed form is the API's 400 ``parse_error`` (``knowledge.api.errors``).
"""
from __future__ import annotations

import functools


def skip_form_parsing() -> None:
    """Make daphne's requests leave form bodies alone (idempotent; nothing to do without daphne)."""
    try:
        from daphne.http_protocol import WebRequest
    except ImportError:  # pragma: no cover - daphne is a dependency; other ASGI servers do not parse forms
        return
    if getattr(WebRequest, "_zhiku_skips_form_parsing", False):
        return
    original = WebRequest.__init__

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        # Read by twisted.web.http.Request.requestReceived, after the body has arrived.
        self._parsePOSTFormSubmission = False

    WebRequest.__init__ = __init__
    WebRequest._zhiku_skips_form_parsing = True
