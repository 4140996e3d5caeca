"""A source's address is checked when it is added (API, console form through the API, ``source_add``), in the
owner's language, and the redirect and rebinding tricks are refused end to end through ``source_run``.

A "public" site stands on 127.0.0.2 (``ZHIKU_SOURCES_PUBLIC_TEST_ADDRESSES``); 127.0.0.1 stands for the
server's own network (the metadata service, the database, Redis)."""
from __future__ import annotations

import json
import socket
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from knowledge.models import Document
from tests.sources.web_fixtures import LONG, layout
from tests.sources.web_server import Resource, Site, page

pytestmark = pytest.mark.django_db


@pytest.fixture
def guarded(settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = False
    settings.ZHIKU_SOURCES_PUBLIC_TEST_ADDRESSES = ("127.0.0.2",)


def command(*args) -> dict:
    out = StringIO()
    call_command(*args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


@pytest.mark.parametrize(("language", "words"), [("zh-hans", "内网"), ("en", "private network")])
@pytest.mark.parametrize("kind, settings_", [
    ("web", {"url": "http://127.0.0.1:9901/latest/meta-data/"}),
    ("web", {"url": "http://10.1.2.3/wiki/"}),
    ("git", {"url": "https://127.0.0.1/team/docs.git"}),
    ("s3", {"bucket": "docs", "endpoint_url": "http://169.254.169.254"}),
])
def test_a_private_address_is_refused_when_the_source_is_added(guarded, kb, alice, client_for, language, words,
                                                               kind, settings_):
    r = client_for(alice).post(f"/api/kbs/{kb.pk}/sources/", {"kind": kind, "name": "内网", "settings": settings_},
                               format="json", HTTP_ACCEPT_LANGUAGE=language)
    assert r.status_code == 400, r.content
    error = r.json()["error"]
    assert error["code"] == "source_address_refused" and words in error["message"]
    assert "ZHIKU_SOURCES_ALLOW_PRIVATE=true" in error["message"]       # what the administrator must set


def test_an_ambiguous_address_is_refused_when_added(guarded, kb, alice, client_for):
    for url in ("http://127.0.0.1:9901\\@attacker.example/", "http://user:pw@docs.example.com/"):
        r = client_for(alice).post(f"/api/kbs/{kb.pk}/sources/", {"kind": "web", "name": "x", "settings": {"url": url}},
                                   format="json")
        assert r.status_code == 400 and r.json()["error"]["code"] == "source_url_invalid", url


def test_source_add_refuses_a_private_address_and_accepts_a_name_that_does_not_resolve_now(guarded, kb, alice):
    with pytest.raises(CommandError, match="source_address_refused"):
        command("source_add", "--kb", kb.name, "--owner", "alice", "--kind", "web", "--url", "http://127.0.0.1:8000/")
    added = command("source_add", "--kb", kb.name, "--owner", "alice", "--kind", "web", "--url",
                    "https://docs.unresolvable.invalid/")          # DNS may be down now: each run checks again
    assert added["id"]


@pytest.fixture
def sites(guarded):
    # The same port on both addresses: a connection that went to the loopback answer would reach the secret.
    with Site(host="127.0.0.2") as public, Site(host="127.0.0.1", port=public.port) as secret:
        secret.pages["/latest/meta-data/iam/"] = page(layout("secret", f"<h1>SECRETWORD</h1>{LONG}"))
        yield public, secret


def test_the_backslash_redirect_is_refused_through_source_run(sites, kb, alice, django_capture_on_commit_callbacks):
    public, secret = sites
    public.pages["/"] = page(layout("首页", f"<h1>首页</h1>{LONG}", '<a href="/moved">moved</a>'))
    public.pages["/moved"] = Resource(
        status=302, location=f"http://127.0.0.1:{secret.port}\\@attacker.example/../latest/meta-data/iam/")
    added = command("source_add", "--kb", kb.name, "--owner", "alice", "--kind", "web", "--url", public.url("/"),
                    "--credential", "authorization=Bearer SOURCE-TOKEN", "--setting", "delay_s=0")
    with django_capture_on_commit_callbacks(execute=True):
        run = command("source_run", str(added["id"]))
    assert run["added"] == 1 and run["failed"] == 1, run
    assert secret.requested() == []
    assert not any("SECRETWORD" in (d.title + d.source_name) for d in Document.objects.filter(kb=kb))


def test_a_rebinding_name_is_refused_through_source_run(sites, kb, alice, monkeypatch,
                                                        django_capture_on_commit_callbacks):
    public, secret = sites
    for path in ("/", "/robots.txt", "/latest/meta-data/iam/"):
        public.pages[path] = page(layout("公开", f"<h1>公开页面 PUBLICWORD</h1>{LONG}"))
    url = f"http://rebind.test:{public.port}/latest/meta-data/iam/"
    added = command("source_add", "--kb", kb.name, "--owner", "alice", "--kind", "web", "--url", url,
                    "--max-pages", "1", "--setting", "delay_s=0")     # rebind.test does not resolve yet: accepted
    real = socket.getaddrinfo
    lookups = []

    def rebinding(host, port, *args, **kwargs):
        # The attacker's name server at its best (TTL 0, perfectly timed): the address check is answered the
        # public address, every other lookup (the one a client makes to connect) loopback.
        if host == "rebind.test":
            checking = sys._getframe(1).f_globals.get("__name__") == "core.net.netguard"
            lookups.append("check" if checking else "connect")
            address = "127.0.0.2" if checking else "127.0.0.1"
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    with django_capture_on_commit_callbacks(execute=True):
        run = command("source_run", str(added["id"]))
    assert run["added"] == 1 and public.requested(), run             # fetched from the address that was checked
    assert secret.requested() == [] and "connect" not in lookups    # never resolved again to connect
    assert not any("SECRETWORD" in c.content for d in Document.objects.filter(kb=kb) for c in d.chunks.all())
