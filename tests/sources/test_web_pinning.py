"""The web connector's one parse and one resolution (core/net/netguard.py, web_fetch.PinnedAdapter).

A "public" site stands on 127.0.0.2 (``ZHIKU_SOURCES_PUBLIC_TEST_ADDRESSES``); a secret server on 127.0.0.1
stands for the metadata service or anything else on the server's own network. Nothing may reach it: not a
redirect whose host two URL parsers read differently, not a name that resolves to the public address for
the check and to loopback for the connection.
"""
from __future__ import annotations

import socket

import pytest
import requests

from core.net import netguard
from sources.kinds.base import Failed, Fetched, SourceError
from sources.kinds.web_fetch import Fetcher, FetchError
from tests.sources.web_fixtures import LONG, layout, scan
from tests.sources.web_server import Resource, Site, page


def _article(word: str, links: str = "") -> Resource:
    return page(layout(word, f"<h1>{word}</h1>{LONG}<p>{word}</p>", links))


@pytest.fixture
def public(settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = False
    settings.ZHIKU_SOURCES_PUBLIC_TEST_ADDRESSES = ("127.0.0.2",)
    with Site(host="127.0.0.2") as site:
        yield site


@pytest.fixture
def secret(public):
    # The public site's port on loopback: a connection to the loopback answer would reach this one.
    with Site(host="127.0.0.1", port=public.port) as site:
        site.pages["/latest/meta-data/iam/"] = page("<p>SECRET-CREDENTIALS</p>")
        yield site


def _fetcher(**kwargs) -> Fetcher:
    return Fetcher(user_agent="zhiku-test", timeout_s=5, **kwargs)


@pytest.mark.parametrize("location", [
    "http://127.0.0.1:{port}\\@attacker.example/../latest/meta-data/iam/",
    "http://attacker.example\\@127.0.0.1:{port}/latest/meta-data/iam/",
    "http://user@127.0.0.1:{port}/latest/meta-data/iam/",
    "http://127.0.0.1:{port}/latest/meta-data/iam/",
])
def test_a_redirect_to_loopback_in_any_spelling_is_refused(public, secret, location):
    public.pages["/"] = Resource(status=302, location=location.format(port=secret.port))
    fetcher = _fetcher(authorization="Bearer SOURCE-TOKEN", auth_origins=frozenset({f"http://127.0.0.2:{public.port}"}))
    with pytest.raises(FetchError) as caught:
        fetcher.get(public.url("/"), max_bytes=100_000)
    fetcher.close()
    assert caught.value.code in ("source_url_invalid", "source_address_refused"), caught.value.message
    assert secret.requested() == []
    assert public.log[0][1].get("Authorization") == "Bearer SOURCE-TOKEN"   # the start origin gets it


def test_the_backslash_redirect_is_refused_through_a_scan(public, secret):
    public.pages["/"] = _article("Home", '<a href="/moved">moved</a> <a href="/fine">fine</a>')
    public.pages["/moved"] = Resource(
        status=302, location=f"http://127.0.0.1:{secret.port}\\@attacker.example/../latest/meta-data/iam/")
    public.pages["/fine"] = _article("Fine")
    items, _ = scan(public)
    assert isinstance(items[public.url("/moved")], Failed)
    assert isinstance(items[public.url("/fine")], Fetched)
    assert secret.requested() == []
    assert not any("SECRET" in (getattr(item, "text", "") or "") for item in items.values())


def test_a_rebinding_name_is_connected_at_the_address_that_was_checked(public, secret, monkeypatch):
    # rebind.test answers the public address first and loopback on every later lookup.
    for path in ("/", "/latest/meta-data/iam/"):
        public.pages[path] = page("<p>PUBLIC-PAGE</p>")
    real = socket.getaddrinfo
    answers = iter(["127.0.0.2"])

    def rebinding(host, port, *args, **kwargs):
        if host == "rebind.test":
            address = next(answers, "127.0.0.1")
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    fetcher = _fetcher()
    response = fetcher.get(f"http://rebind.test:{public.port}/latest/meta-data/iam/", max_bytes=100_000)
    fetcher.close()
    assert b"PUBLIC-PAGE" in response.body
    assert secret.requested() == []
    assert public.log[-1][1].get("Host") == f"rebind.test:{public.port}"


def test_a_request_whose_host_was_not_checked_is_not_sent(public):
    fetcher = _fetcher()
    with pytest.raises(requests.exceptions.InvalidURL, match="was not checked"):
        fetcher.session.get(public.url("/"), timeout=5)      # around the check: the adapter has no pin
    fetcher.close()
    assert public.requested() == []


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:80\\@example.com/", "http://a@example.com/", "http://exa mple.com/",
    "ftp://example.com/", "http://example.com:99999/",
])
def test_ambiguous_addresses_are_refused_by_the_parse(url):
    with pytest.raises(SourceError) as caught:
        netguard.parse(url)
    assert caught.value.code == "source_url_invalid"


def test_the_public_stand_in_is_refused_in_production(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "ZHIKU_ENV": "production", "ZHIKU_SOURCES_PUBLIC_TEST_ADDRESSES": "127.0.0.2"}
    done = subprocess.run([sys.executable, "-c", "import config.sources"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0 and "ZHIKU_SOURCES_PUBLIC_TEST_ADDRESSES" in done.stderr
