"""Which redirect URIs an MCP client may register and have people sent back to: https anywhere, http on the loopback.

One rule for the registration (assistants/mcp_auth/views.py) and the consent page (assistants/mcp_auth/consent.py), so
a URI refused at registration is refused too when a client registered before the rule holds one. A URI is one
RFC 3986 reference: no whitespace (the toolkit stores a client's URIs space-separated, so a space inside one would
store several, ``javascript:`` among them), no backslash (browsers read ``\\`` as ``/`` in http(s) URLs, the WHATWG
URL standard §4.4, so ``https://client.example\\@evil.example/`` leads elsewhere than it reads), no control or
format character (C0, DEL, C1, and the bidirectional overrides that would make the consent page show another
address), no fragment (RFC 6749 §3.1.2).
"""
from __future__ import annotations

import unicodedata
from urllib.parse import urlsplit

LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
MAX_URI_CHARS = 2000


def _unsafe(char: str) -> bool:
    return char.isspace() or char == "\\" or unicodedata.category(char) in ("Cc", "Cf")


def redirect_uri_problem(uri: object) -> str:
    """Why ``uri`` may not be a redirect URI ("" when it may), in English for the client's developer."""
    if not isinstance(uri, str) or not uri or len(uri) > MAX_URI_CHARS:
        return f"each redirect_uri must be a URI of at most {MAX_URI_CHARS} characters"
    if any(_unsafe(c) for c in uri):
        return f"redirect_uri {uri!r} must not contain whitespace, backslashes or control characters"
    try:
        parts = urlsplit(uri)
        host = parts.hostname
    except ValueError:  # a bracketed host that is no IPv6 address
        return f"redirect_uri {uri!r} is not a URI"
    if parts.fragment or "#" in uri:
        return "a redirect_uri must not have a fragment"
    if parts.scheme == "https" and host:
        return ""
    if parts.scheme == "http" and host in LOOPBACK_HOSTS:
        return ""
    return f"redirect_uri {uri!r} must use https, or http on the loopback interface (127.0.0.1, [::1], localhost)"
