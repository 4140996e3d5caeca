"""daphne leaves POST bodies to the application: Twisted does not parse them as forms first.

Twisted's ``http.Request`` parses every form POST body before daphne sees it (into ``request.args``, which
daphne never reads): a multipart body it cannot parse got a bare ``400 Bad Request`` from Twisted, not the
API's error shape, and a good upload was parsed twice, each copy in memory. ``skip_form_parsing`` sets
Twisted's ``parsePOSTFormSubmission=False`` on every request daphne makes (daphne never passes it), so
Django reads the body once and a malformed form is the API's 400 ``parse_error`` (``core.api.errors``).

``chunked_with_length``: Django parses a form only up to its ``Content-Length`` (``MultiPartParser`` reads nothing
without one), so a file sent with ``Transfer-Encoding: chunked`` arrived as an empty form (400 ``no_files``).
Twisted has the whole body by the time daphne hands the request on: its length is put in the header.
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


def chunked_with_length() -> None:
    """Hand a chunked request on with the ``Content-Length`` of its whole, already received body (idempotent)."""
    try:
        from daphne.http_protocol import WebRequest
    except ImportError:  # pragma: no cover - daphne is a dependency
        return
    if getattr(WebRequest, "_zhiku_chunked_with_length", False):
        return
    original = WebRequest.requestReceived

    @functools.wraps(original)
    def requestReceived(self, command, path, version):
        encodings = b",".join(self.requestHeaders.getRawHeaders(b"transfer-encoding") or []).lower()
        if b"chunked" in encodings and self.content is not None:
            length = self.content.seek(0, 2)
            self.requestHeaders.removeHeader(b"transfer-encoding")
            self.requestHeaders.setRawHeaders(b"content-length", [str(length).encode()])
        original(self, command, path, version)

    WebRequest.requestReceived = requestReceived
    WebRequest._zhiku_chunked_with_length = True
