"""The one way the connectors' HTTP requests leave the server: a ``requests`` session that connects only to
addresses :func:`core.net.netguard.target` checked.

:class:`PinnedAdapter` connects to the checked address and never resolves the name again (no DNS rebinding),
while TLS is still verified against the name (``server_hostname``, ``assert_hostname``) and ``Host`` carries
it; a request to a host not pinned is refused. Used by the web connector (``web_fetch.Fetcher``, pinning each
hop) and the Feishu and Yuque API client (``jsonapi.JsonClient``, pinning its service for the run).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import requests
from requests import PreparedRequest
from requests.adapters import HTTPAdapter

from core.net import netguard

if TYPE_CHECKING:
    from requests.adapters import _HostParams, _PoolKwargs


class PinnedAdapter(HTTPAdapter):
    """An adapter that connects only to addresses :func:`netguard.target` checked: ``pins`` maps
    (scheme, host, port) to the address; a host with no pin is refused (``requests.exceptions.InvalidURL``)."""

    def __init__(self) -> None:
        self.pins: dict[tuple[str, str, int], str] = {}
        super().__init__(max_retries=0)

    def pin(self, checked: netguard.Target) -> None:
        self.pins[(checked.scheme, checked.host, checked.port)] = checked.address

    def build_connection_pool_key_attributes(self, request: PreparedRequest, verify: bool | str,
                                             cert: str | tuple[str, str] | None = None) -> tuple[_HostParams, _PoolKwargs]:
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
        scheme = host_params["scheme"]
        name = (host_params["host"] or "").strip("[]").lower().rstrip(".")
        port = host_params["port"] or {"http": 80, "https": 443}.get(scheme, 443)
        address = self.pins.get((scheme, name, port))
        if address is None:
            raise requests.exceptions.InvalidURL(f"{name} was not checked (core/net/netguard.py)")
        host_params = {**host_params, "host": address, "port": port}
        if scheme == "https":               # the certificate must still name the host, not the address
            # urllib3's pools take these keys; the stubs' _PoolKwargs lists only those requests itself sets.
            tls: dict[str, Any] = {**pool_kwargs, "server_hostname": name, "assert_hostname": name}
            pool_kwargs = cast("_PoolKwargs", tls)
        return host_params, pool_kwargs


def pinned_session() -> tuple[requests.Session, PinnedAdapter]:
    """A session whose every http(s) request goes through a new :class:`PinnedAdapter`; no proxy or .netrc from
    the server's environment."""
    session = requests.Session()
    session.trust_env = False
    adapter = PinnedAdapter()
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session, adapter
