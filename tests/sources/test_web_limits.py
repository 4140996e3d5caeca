"""The web connector against hostile or broken sites: byte caps, private addresses behind redirects, other
sites, page limits, a start page that fails, robots.txt that forbids or cannot be read, cancellation."""
from __future__ import annotations

import ipaddress

import pytest

from core.net import netguard
from sources.kinds.base import Failed, Fetched, Limits, SourceError
from tests.sources.web_fixtures import LONG, build_site, kinds, layout, scan
from tests.sources.web_server import Resource, Site, page


@pytest.fixture
def site(settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True
    with Site() as running:
        build_site(running)
        yield running


def _article(word: str, links: str = "") -> Resource:
    return page(layout(word, f"<h1>{word}</h1>{LONG}<p>{word}</p>", links))


def test_an_endless_response_is_cut_off_at_the_byte_cap(site):
    site.pages["/"] = _article("Home", '<a href="/huge">huge</a> <a href="/declared">declared</a>')
    site.pages["/huge"] = Resource(b"<p>" + b"x" * 65536, "text/html", endless=True)
    site.pages["/declared"] = Resource(b"y" * 300_000, "text/html")
    items, _ = scan(site, limits=Limits(max_bytes_per_item=200_000, timeout_s=5))
    for path in ("/huge", "/declared"):
        failed = items[site.url(path)]
        assert isinstance(failed, Failed) and failed.code == "web_too_large", failed
        assert "200000" in failed.message
    assert isinstance(items[site.url("/")], Fetched)


def test_a_redirect_to_a_private_address_is_refused(site, settings, monkeypatch):
    # The site stands for a public one: its own loopback address passes the check, no other does.
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = False
    real = netguard._refused
    monkeypatch.setattr(netguard, "_refused", lambda address: address != ipaddress.ip_address("127.0.0.1") and real(address))
    site.pages["/"] = _article("Home", '<a href="/to-metadata">cloud</a> <a href="/fine">fine</a>')
    site.pages["/to-metadata"] = Resource(status=302, location="http://169.254.169.254/latest/meta-data/")
    site.pages["/fine"] = _article("Fine")
    items, _ = scan(site)
    refused = items[site.url("/to-metadata")]
    assert isinstance(refused, Failed) and refused.code == "source_address_refused"
    assert isinstance(items[site.url("/fine")], Fetched)


def test_a_start_url_on_a_private_address_is_refused(site, settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = False
    with pytest.raises(SourceError) as caught:
        scan(site)
    assert caught.value.code == "source_address_refused"
    assert site.requested() == []


def test_a_redirect_to_another_site_is_not_followed(site):
    other = site.url("/elsewhere").replace("127.0.0.1", "localhost")   # another host, same machine
    site.pages["/"] = _article("Home", '<a href="/moved">moved</a> <a href="/within">within</a>')
    site.pages["/moved"] = Resource(status=301, location=other)
    site.pages["/within"] = Resource(status=301, location="/target")
    site.pages["/target"] = _article("Target")
    site.pages["/elsewhere"] = _article("Elsewhere")
    items, result = scan(site)
    found = kinds(items)
    assert "/target" in found and "/moved" not in found and "/within" not in found   # /within is /target
    assert "/elsewhere" not in site.requested()
    assert result.complete


def test_too_many_redirects_fail_the_page(site):
    site.pages["/"] = _article("Home", '<a href="/loop0">loop</a>')
    for i in range(10):
        site.pages[f"/loop{i}"] = Resource(status=302, location=f"/loop{i + 1}")
    items, _ = scan(site)
    assert items[site.url("/loop0")].code == "web_too_many_redirects"


def test_the_page_limit_leaves_the_scan_incomplete(site):
    items, result = scan(site, max_pages=3)
    assert len(items) == 3
    assert not result.complete and "page limit (3)" in result.note
    items, result = scan(site, max_pages=3, limits=Limits(max_items=2, timeout_s=5))   # the platform's budget wins
    assert len(items) == 2 and not result.complete


def test_depth_and_patterns_bound_the_walk(site):
    items, _ = scan(site, max_depth=0)
    assert set(kinds(items)) == {"/"}
    items, _ = scan(site, max_depth=1)
    assert "/deep" not in kinds(items) and "/guide/config.html" in kinds(items)   # /deep is two links away
    items, _ = scan(site, exclude=["/files/*", "*.html"])
    assert not {"/files/report.pdf", "/files/notes.docx", "/guide/config.html", "/deep"} & set(kinds(items))
    items, _ = scan(site, include=["/guide/*"])             # the start page is read for its links, not kept
    assert set(kinds(items)) == {"/guide/install", "/guide/config.html"}


def test_a_start_page_that_fails_stops_the_scan(site):
    site.pages["/"] = Resource(b"down", "text/plain", status=502)
    with pytest.raises(SourceError) as caught:
        scan(site)
    assert caught.value.code == "web_http_status" and "502" in caught.value.message
    del site.pages["/"]
    with pytest.raises(SourceError) as caught:
        scan(site)
    assert caught.value.code == "web_http_status"


def test_an_unreachable_site_is_a_source_error(settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True
    with Site() as gone:
        pass                                                  # served nothing and closed: its port refuses
    with pytest.raises(SourceError) as caught:
        scan(gone)
    assert caught.value.code == "source_unreachable"


def test_robots_txt_that_forbids_the_start_or_cannot_be_read(site):
    site.pages["/robots.txt"] = Resource(b"User-agent: zhiku-bot\nDisallow: /\n\nUser-agent: *\nAllow: /\n", "text/plain")
    with pytest.raises(SourceError) as caught:
        scan(site)
    assert caught.value.code == "web_robots_refused"
    assert site.requested() == ["/robots.txt"]
    site.pages["/robots.txt"] = Resource(b"busy", "text/plain", status=503)
    with pytest.raises(SourceError) as caught:
        scan(site)
    assert caught.value.code == "web_robots_unavailable"
    del site.pages["/robots.txt"]                            # no robots.txt at all: everything may be read
    items, _ = scan(site)
    assert site.url("/private/secret") in items


def test_robots_wildcards_and_crawl_delay(site):
    from sources.kinds.web import WebConnector

    site.pages["/robots.txt"] = Resource(b"User-agent: *\nDisallow: /*.pdf$\nCrawl-delay: 0.01\n", "text/plain")
    connector = WebConnector(WebConnector.clean_settings({"url": site.url("/"), "delay_s": 0}), {}, limits=Limits())
    robots = connector.robots_for(connector.site)
    assert not robots.allowed(site.url("/files/report.pdf")) and robots.allowed(site.url("/files/report.pdf?x"))
    assert connector.fetcher.interval_s == pytest.approx(0.01)   # Crawl-delay above the source's 0 s wins
    connector.close()
    items, _ = scan(site)
    assert site.url("/files/report.pdf") not in items and site.url("/files/notes.docx") in items


def test_noindex_pages_are_walked_not_kept_and_junk_is_skipped(site):
    site.pages["/"] = _article("Home", '<a href="/hub">hub</a> <a href="/data.bin2">data</a>')
    site.pages["/hub"] = page('<html><head><meta name="robots" content="noindex"></head><body>'
                              '<a href="/leaf">leaf</a></body></html>')
    site.pages["/leaf"] = _article("Leaf")
    site.pages["/data.bin2"] = Resource(b"\x00\x01", "application/octet-stream")
    items, _ = scan(site)
    found = kinds(items)
    assert "/leaf" in found and "/hub" not in found and "/data.bin2" not in found


def test_cancelling_stops_between_pages(site):
    calls = []
    items, result = scan(site, cancelled=lambda: calls.append(1) or len(calls) > 2)
    assert len(items) == 3 and not result.complete and "cancelled" in result.note


def test_the_authorization_credential_goes_only_to_the_site(site):
    other = site.url("/x").replace("127.0.0.1", "localhost")
    site.pages["/"] = _article("Home", '<a href="/away">away</a>')
    site.pages["/away"] = Resource(status=302, location=other)
    scan(site, credentials={"authorization": "Bearer intranet-token"})
    sent = dict(site.log)
    assert sent["/"]["Authorization"] == "Bearer intranet-token"
    assert "/x" not in sent                                   # off-site: never requested, let alone with the token
