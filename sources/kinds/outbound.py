"""The one way the connectors' HTTP requests leave the server: a ``requests`` session that connects only to
addresses :func:`sources.kinds.netguard.target` checked.

``netguard.target`` parses a URL once (refusing any that two URL parsers read differently) and resolves its host
once, checking every address. :class:`PinnedAdapter` then connects to that checked address — it never resolves
the name again, so a name that answers a public address for the check and a private one for the connection
(DNS rebinding) reaches nothing private — while TLS is still verified against the name (``server_hostname`` and
``assert_hostname``) and the ``Host`` header carries it. A request to a host that was not pinned is refused,
not sent. Used by the web connector (``web_fetch.Fetcher``, which pins each hop, redirects included) and by the
Feishu and Yuque API client (``jsonapi.JsonClient``, which pins its service's address for the run).
"""
from __future__ import annotations

import requests
from requests.adapters import HTTPAdapter

from sources.kinds import netguard


class PinnedAdapter(HTTPAdapter):
    """An adapter that connects only to addresses :func:`netguard.target` checked: ``pins`` maps
    (scheme, host, port) to the address; a host with no pin is refused (``requests.exceptions.InvalidURL``)."""

    def __init__(self) -> None:
        self.pins: dict[tuple[str, str, int], str] = {}
        super().__init__(max_retries=0)

    def pin(self, checked: netguard.Target) -> None:
        self.pins[(checked.scheme, checked.host, checked.port)] = checked.address

    def build_connection_pool_key_attributes(self, request, verify, cert=None):
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
        scheme = host_params["scheme"]
        name = (host_params["host"] or "").strip("[]").lower().rstrip(".")
        port = host_params["port"] or {"http": 80, "https": 443}.get(scheme, 443)
        address = self.pins.get((scheme, name, port))
        if address is None:
            raise requests.exceptions.InvalidURL(f"{name} was not checked (sources/kinds/netguard.py)")
        host_params = {**host_params, "host": address, "port": port}
        if scheme == "https":               # the certificate must still name the host, not the address
            pool_kwargs = {**pool_kwargs, "server_hostname": name, "assert_hostname": name}
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
