"""Refuse hosts an owner should not be able to make the server reach (SSRF, OWASP A10:2021): the cloud metadata
service, loopback, the private network. Every connector checks before it connects and at every redirect;
``ZHIKU_SOURCES_ALLOW_PRIVATE`` turns the check off (``ZHIKU_SOURCES_PUBLIC_TEST_ADDRESSES``: loopback
addresses the tests treat as public).

:func:`parse` refuses userinfo, backslashes and any URL that ``urlsplit`` and urllib3 read differently
(``http://127.0.0.1:9901\\@attacker.example/``); :func:`target` resolves a name once and returns the checked
address, which the client connects to (``core.net.pinned.PinnedAdapter``), so DNS rebinding reaches nothing.
"""
from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from urllib3.exceptions import LocationParseError
from urllib3.util import parse_url

from core.net.errors import OutboundError


def _private_allowed() -> bool:
    return bool(getattr(settings, "ZHIKU_SOURCES_ALLOW_PRIVATE", False))


def _public_test_addresses() -> frozenset[str]:
    return frozenset(getattr(settings, "ZHIKU_SOURCES_PUBLIC_TEST_ADDRESSES", ()) or ())


def _refused(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if str(address) in _public_test_addresses():
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return not address.is_global or address.is_multicast


@dataclass(frozen=True)
class Target:
    """One parse of a URL: what the check saw and what the connection must use."""

    scheme: str
    host: str            # lower-case, no brackets, no trailing dot
    port: int            # the explicit port, or the scheme's default
    address: str         # the resolved address that was checked: connect to this one

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = {"http": 80, "https": 443}.get(self.scheme)
        return host if self.port == default else f"{host}:{self.port}"


def resolve(host: str, port: int | None = None, *, private: bool | None = None) -> str:
    """Resolve ``host`` once, check every address it has, and return the first: the one to connect to.

    Raises ``OutboundError("source_address_refused")`` when any address is not public (unless ``private`` is
    True; None: ``ZHIKU_SOURCES_ALLOW_PRIVATE``), ``source_unreachable`` when the name does not resolve.
    """
    if not host:
        raise OutboundError("source_url_invalid", "the address has no host")
    try:
        infos = socket.getaddrinfo(host, port or 443, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise OutboundError("source_unreachable", f"cannot resolve {host}: {exc}") from None
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
    if not addresses:
        raise OutboundError("source_unreachable", f"cannot resolve {host}")
    if not (_private_allowed() if private is None else private):
        for address in addresses:
            if _refused(address):
                raise OutboundError("source_address_refused", host if host == str(address) else f"{host} → {address}")
    return str(addresses[0])


def check_host(host: str, port: int | None = None) -> None:
    """Raise ``OutboundError("source_address_refused")`` when ``host`` resolves to a non-public address."""
    resolve(host, port)


def parse(url: str, schemes: tuple[str, ...] = ("http", "https")) -> tuple[str, str, int]:
    """(scheme, host, port) of ``url``, refusing anything two URL parsers could read differently."""
    if "\\" in url or any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        raise OutboundError("source_url_invalid", "the address contains a backslash, a space or a control character")
    try:
        strict = parse_url(url)
        loose = urlsplit(url)
        loose_port = loose.port
    except (LocationParseError, ValueError):
        raise OutboundError("source_url_invalid", "the address cannot be read") from None
    scheme = (strict.scheme or "").lower()
    if scheme not in schemes or loose.scheme.lower() != scheme:
        raise OutboundError("source_url_invalid", f"the address must start with {' or '.join(s + '://' for s in schemes)}")
    if strict.auth or "@" in loose.netloc:
        raise OutboundError("source_url_invalid", "the address must not contain a user name or password")
    host = (strict.host or "").strip("[]").lower().rstrip(".")
    if not host or host != (loose.hostname or "").lower().rstrip(".") or strict.port != loose_port:
        raise OutboundError("source_url_invalid", "the address's host cannot be read unambiguously")
    port = strict.port or {"http": 80, "https": 443}.get(scheme, 443)
    return scheme, host, port


def target(url: str, schemes: tuple[str, ...] = ("http", "https")) -> Target:
    """Parse ``url`` once, resolve its host once and check it: the :class:`Target` to connect to."""
    scheme, host, port = parse(url, schemes)
    return Target(scheme, host, port, resolve(host, port))


def check_url(url: str, schemes: tuple[str, ...] = ("http", "https")) -> None:
    """Check the scheme and the host of ``url``."""
    target(url, schemes)


def check_when_added(url: str, schemes: tuple[str, ...] = ("http", "https")) -> None:
    """The check a source's address gets when it is added or changed: an ambiguous URL or a private address is
    refused at once, so the owner hears it then and not at the first run. A name that does not resolve now is
    let through (DNS may be down for a moment; each run checks again, and reports it)."""
    try:
        target(url, schemes)
    except OutboundError as exc:
        if exc.code != "source_unreachable":
            raise
