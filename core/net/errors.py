"""What the outbound client raises when a URL cannot be fetched: refused, unreadable or unreachable."""
from __future__ import annotations


class OutboundError(Exception):
    """A URL or a whole source cannot be read (bad credentials, unreachable host, refused address, bad settings).

    ``code`` is a registered error code; ``message`` is for the person who gave the URL.
    """

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message
