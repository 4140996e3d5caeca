"""Refuse hosts an owner should not be able to make the server reach (SSRF, OWASP A10:2021).

A source's URL is typed by a KB owner and fetched by the server, so without this check an owner could
read the cloud metadata service (169.254.169.254), the database or Redis on loopback, or other machines
on the private network. Every connector calls :func:`check_url` (or :func:`check_host`) before it
connects, and again for every redirect target. ``ZHIKU_SOURCES_ALLOW_PRIVATE`` turns the check off for
installations whose documents live on the private network (and for the tests, whose servers are on
loopback).
"""
from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

from sources.kinds.base import SourceError


def _private_allowed() -> bool:
    return bool(getattr(settings, "ZHIKU_SOURCES_ALLOW_PRIVATE", False))


def _refused(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return not address.is_global or address.is_multicast


def check_host(host: str, port: int | None = None) -> None:
    """Raise ``SourceError("source_address_refused")`` when ``host`` resolves to a non-public address."""
    if not host:
        raise SourceError("source_url_invalid", "the address has no host")
    if _private_allowed():
        return
    try:
        infos = socket.getaddrinfo(host, port or 443, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise SourceError("source_unreachable", f"cannot resolve {host}: {exc}") from None
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%", 1)[0])
        if _refused(address):
            raise SourceError("source_address_refused",
                              f"{host} resolves to {address}, a private address (set ZHIKU_SOURCES_ALLOW_PRIVATE to allow it)")


def check_url(url: str, schemes: tuple[str, ...] = ("http", "https")) -> None:
    """Check the scheme and the host of ``url``."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in schemes:
        raise SourceError("source_url_invalid", f"the address must start with {' or '.join(s + '://' for s in schemes)}")
    try:
        port = parts.port
    except ValueError:
        raise SourceError("source_url_invalid", "the address has an invalid port") from None
    check_host(parts.hostname or "", port)
