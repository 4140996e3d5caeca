"""The model endpoints' HTTP client: the ``openai`` SDK's httpx transport, resolving each host once and connecting
to that address (the same rule as the connectors' client, core/net/pinned.py).

An endpoint's address is set by staff and may well be on the private network (Ollama, vLLM), so private
addresses are allowed here; what the transport adds is that the name is resolved once (by
:func:`core.net.netguard.resolve`) and the connection goes to that address, TLS still verified against the
name (httpcore's ``sni_hostname``) and ``Host`` carrying it. No proxy or .netrc from the server's environment.
"""
from __future__ import annotations

import httpx2

from core.net import netguard
from core.net.errors import OutboundError

DEFAULT_PORTS = {"http": 80, "https": 443}


class PinnedTransport(httpx2.HTTPTransport):
    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        host = request.url.host
        try:
            address = netguard.resolve(host, request.url.port or DEFAULT_PORTS.get(request.url.scheme), private=True)
        except OutboundError as exc:
            raise httpx2.ConnectError(exc.message, request=request) from None
        if address != host:
            request.extensions = {**request.extensions, "sni_hostname": host}
            request.url = request.url.copy_with(host=address)   # the Host header keeps the name
        return super().handle_request(request)


def pinned_http_client(timeout: float) -> httpx2.Client:
    return httpx2.Client(transport=PinnedTransport(), timeout=timeout, trust_env=False, follow_redirects=False)
