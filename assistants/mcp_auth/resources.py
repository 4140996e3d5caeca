"""The MCP resources' identifiers (RFC 8707 / RFC 9728) and the 401 challenge that names their metadata.

A resource is ``<origin>/mcp/`` (what an assistant key, a KB key or a token bound to one assistant or KB reaches)
or ``<origin>/mcp/kb/<id>/`` (one KB's search). Its metadata is at ``<origin>/.well-known/oauth-protected-resource``
followed by the resource's path (RFC 9728 §3.1); the origin is the request's own, as Django builds absolute URLs
(``Host`` checked against ``ALLOWED_HOSTS``, ``https`` behind a TLS proxy per ``SECURE_PROXY_SSL_HEADER``).
"""
from __future__ import annotations

import re
from urllib.parse import urlsplit

from django.conf import settings

WELL_KNOWN = "/.well-known/oauth-protected-resource"
_PATH = re.compile(r"^/mcp(?:/kb/(?P<kb>[1-9][0-9]{0,17}))?/?$")


def mcp_target(path: str) -> tuple[bool, int | None] | None:
    """``(True, None)`` for ``/mcp/``, ``(True, kb_id)`` for ``/mcp/kb/<id>/``, None for any other path."""
    found = _PATH.match(path or "")
    if found is None:
        return None
    return True, int(found["kb"]) if found["kb"] else None


def resource_path(kb_id: int | None) -> str:
    return f"/mcp/kb/{kb_id}/" if kb_id is not None else "/mcp/"


def origin_of_scope(scope, host: str) -> str:
    """``scheme://host`` of an ASGI request (its ``Host`` already checked), https behind a TLS proxy."""
    scheme = scope.get("scheme") or "http"
    proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy:
        name = proxy[0].removeprefix("HTTP_").replace("_", "-").lower().encode()
        sent = [v.decode("latin-1") for k, v in scope.get("headers") or [] if k.lower() == name]
        scheme = "https" if sent and sent[0].split(",")[0].strip() == proxy[1] else "http"
    return f"{scheme}://{host}"


def origin_of_request(request) -> str:
    return request.build_absolute_uri("/").rstrip("/")


def resource_url(origin: str, kb_id: int | None) -> str:
    return origin + resource_path(kb_id)


def metadata_url(origin: str, kb_id: int | None) -> str:
    return origin + WELL_KNOWN + resource_path(kb_id)


def canonical(uri: str) -> str:
    """A resource URI compared as RFC 8707 asks: scheme and host lower-case, the path with one trailing slash."""
    parts = urlsplit(uri.strip())
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}/"


def same_resource(a: str, b: str) -> bool:
    return canonical(a) == canonical(b)


def our_resource(uri: str, origin: str) -> int | None | bool:
    """The KB id of ``uri`` when it names ``/mcp/kb/<id>/`` at ``origin``, None for ``/mcp/``, False otherwise."""
    parts = urlsplit(uri.strip())
    if parts.query or parts.fragment or f"{parts.scheme.lower()}://{parts.netloc.lower()}" != origin.lower():
        return False
    target = mcp_target(parts.path)
    return False if target is None else target[1]


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def challenge(origin: str, kb_id: int | None, *, error: str = "", description: str = "") -> bytes:
    """``WWW-Authenticate`` of a 401 at the resource: where its metadata is (RFC 9728 §5.1), the scope, and for a
    credential that was sent and refused, ``error="invalid_token"`` (RFC 6750 §3.1; none when none was sent)."""
    parts = [f"resource_metadata={_quoted(metadata_url(origin, kb_id))}", 'scope="mcp"']
    if error:
        parts.append(f"error={_quoted(error)}")
        if description:
            parts.append(f"error_description={_quoted(description.encode('ascii', 'replace').decode())}")
    return ("Bearer " + ", ".join(parts)).encode("latin-1")
