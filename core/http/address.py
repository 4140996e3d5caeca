"""The site's address as people and chat platforms outside reach it, and whether a host can be reached from outside."""
from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest

LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa")
"""Names that resolve only inside a network (RFC 6761 localhost, RFC 6762 .local, RFC 8375 home.arpa, and the
suffixes private networks use by custom)."""


def public_base(request: HttpRequest) -> str:
    """``ZHIKU_PUBLIC_URL`` (config/bots.py), else the scheme and host the request came to; no trailing slash."""
    return settings.ZHIKU_PUBLIC_URL or request.build_absolute_uri("/").rstrip("/")


def local_host(host: str) -> bool:
    """Whether the internet cannot reach ``host``: an address that is not global (loopback 127.0.0.0/8 and ::1, the
    private 10/8, 172.16/12, 192.168/16 and fc00::/7, link-local, shared 100.64/10, unspecified), ``localhost``, a
    name without a dot (a machine or container name) or one under ``LOCAL_SUFFIXES``. A public-looking name is taken
    as it is: it is not resolved here."""
    host = host.strip().strip("[]").rstrip(".").lower()
    if not host:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost" or "." not in host or host.endswith(LOCAL_SUFFIXES)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return not address.is_global


def url_host(url: str) -> str:
    """The host of ``url`` ("" when it has none or is not a URL)."""
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""
