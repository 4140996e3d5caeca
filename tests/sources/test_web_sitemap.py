"""The web connector's settings, sitemaps (an index, <lastmod>, gzip, hostile XML), and pages the extractor
cannot read (the HTML kept instead; a GBK-encoded page)."""
from __future__ import annotations

import gzip

import pytest

from sources.kinds.base import Fetched, SourceError, Unchanged
from sources.kinds.web import WebConnector
from tests.sources.web_fixtures import LONG, build_site, kinds, layout, remember, scan
from tests.sources.web_server import Resource, Site, page

URLSET = """<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{}</urlset>"""


def _urls(*entries: tuple[str, str]) -> bytes:
    body = "".join(f"<url><loc>{loc}</loc><lastmod>{lastmod}</lastmod></url>" for loc, lastmod in entries)
    return URLSET.format(body).encode()


@pytest.fixture
def site(settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True
    with Site() as running:
        build_site(running)
        yield running


def test_settings_are_checked_and_normalised(settings):
    settings.ZHIKU_SOURCES_WEB_MAX_PAGES = 500
    clean = WebConnector.clean_settings({"url": "HTTPS://Docs.Example.COM/guide#top", "max_pages": "50",
                                         "include": "/guide/*\n/faq/*, /zh/*", "files": "false"})
    assert clean == {"url": "https://docs.example.com/guide", "max_pages": 50, "max_depth": 3,
                     "include": ["/guide/*", "/faq/*", "/zh/*"], "exclude": [], "delay_s": 0.5, "files": False}
    for bad, field in (({"url": "ftp://example.com/"}, "url"), ({}, "url"), ({"url": "https:///x"}, "url"),
                       ({"url": "https://e.com/", "max_pages": 501}, "max_pages"),
                       ({"url": "https://e.com/", "max_depth": -1}, "max_depth"),
                       ({"url": "https://e.com/", "delay_s": 600}, "delay_s"),
                       ({"url": "https://e.com/", "files": "maybe"}, "files"),
                       ({"url": "https://e.com/", "exclude": [3]}, "exclude"),
                       ({"url": "https://e.com/", "user_agent": "Mozilla"}, "user_agent")):
        with pytest.raises(SourceError) as caught:
            WebConnector.clean_settings(bad)
        assert caught.value.code == "source_settings_invalid" and caught.value.message.startswith(field), bad
    assert WebConnector.secret_fields == ("authorization",)


def test_the_codes_read_in_chinese_with_the_connector_s_sentence():
    from django.utils import translation

    from core.errors import failure_text as source_error_text

    with translation.override("zh-hans"):
        shown = source_error_text("web_http_status", "http://e.com/a answered HTTP 503.")
    assert shown == "网页返回了 HTTP 错误：http://e.com/a answered HTTP 503."


def test_a_sitemap_index_seeds_the_walk_and_lastmod_saves_requests(site):
    site.pages["/sitemap.xml"] = Resource(
        b'<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<sitemap><loc>" + site.url("/sitemap-docs.xml.gz").encode() + b"</loc></sitemap>"
        b"<sitemap><loc>http://elsewhere.invalid/sitemap.xml</loc></sitemap></sitemapindex>", "application/xml")
    entries = [(site.url("/guide/install"), "2026-11-01"), (site.url("/zh/policy"), "2026-11-02"),
               (site.url("/private/secret"), "2026-11-03"), ("http://elsewhere.invalid/page", "2026-11-04")]
    site.pages["/sitemap-docs.xml.gz"] = Resource(gzip.compress(_urls(*entries)), "application/gzip")
    items, result = scan(site, url=site.url("/sitemap.xml"), max_depth=0)
    assert set(kinds(items)) == {"/guide/install", "/zh/policy"}    # robots.txt still rules; other sites dropped
    assert result.complete, result.note
    known = remember({}, items)
    site.pages["/zh/policy"] = page(layout("差旅费管理办法", "<h1>差旅费管理办法（修订）</h1>" + LONG), etag='"policy-2"')
    entries[1] = (site.url("/zh/policy"), "2026-11-20")
    site.pages["/sitemap-docs.xml.gz"] = Resource(gzip.compress(_urls(*entries)), "application/gzip")
    site.clear_log()
    items, result = scan(site, known, url=site.url("/sitemap.xml"), max_depth=0)
    assert isinstance(items[site.url("/guide/install")], Unchanged)
    assert isinstance(items[site.url("/zh/policy")], Fetched) and "修订" in items[site.url("/zh/policy")].data.decode()
    assert "/guide/install" not in site.requested()                  # same lastmod: not even a conditional GET
    # a new lastmod whose page answers 304: the new lastmod is stored, so the next scan asks nothing
    known = remember(known, items)
    entries[0] = (site.url("/guide/install"), "2026-11-21")
    site.pages["/sitemap-docs.xml.gz"] = Resource(gzip.compress(_urls(*entries)), "application/gzip")
    items, _ = scan(site, known, url=site.url("/sitemap.xml"), max_depth=0)
    assert items[site.url("/guide/install")].state["lastmod"] == "2026-11-21"
    site.clear_log()
    items, _ = scan(site, remember(known, items), url=site.url("/sitemap.xml"), max_depth=0)
    assert isinstance(items[site.url("/guide/install")], Unchanged) and "/guide/install" not in site.requested()


def test_a_sitemap_that_is_not_one_or_is_hostile(site):
    site.pages["/sitemap.xml"] = page("<html><body>not a sitemap</body></html>")
    with pytest.raises(SourceError) as caught:
        scan(site, url=site.url("/sitemap.xml"))
    assert caught.value.code == "web_not_a_page"
    # an entity bomb: entities are not expanded, the loc stays as written (and is not a URL of the site)
    site.pages["/sitemap.xml"] = Resource(
        b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
        b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>&c;&x;</loc></url>'
        b"<url><loc>" + site.url("/deep").encode() + b"</loc></url></urlset>", "application/xml")
    items, _ = scan(site, url=site.url("/sitemap.xml"), max_depth=0)
    assert set(kinds(items)) == {"/deep"}


def test_a_page_without_main_content_keeps_its_html(site):
    site.pages["/"] = page('<html><head><title>Links</title></head><body><footer><p>版权所有 2026 星河科技</p>'
                           '<a href="/deep">deep</a> <a href="/blank">blank</a></footer></body></html>', etag='"links"')
    site.pages["/blank"] = page('<html><body><div id="app"></div><script>render()</script></body></html>')
    items, _ = scan(site, max_depth=1)
    home = items[site.url("/")]   # trafilatura found no main content: the HTML itself, for the HTML parser
    assert home.name.endswith("/index.html") and home.data == site.pages["/"].body and home.title == "Links"
    assert site.url("/deep") in items
    assert site.url("/blank") not in items and "/blank" in site.requested()   # no text at all: nothing kept


def test_a_gbk_page_is_decoded(site):
    html = ('<html><head><meta charset="gbk"><title>报销流程</title></head><body><article><h1>报销流程</h1>'
            "<p>第七条 员工应当在出差结束后十个工作日内提交报销申请，并附上发票、行程单和出差申请单。"
            "逾期提交的，财务部门有权不予受理。报销申请由部门负责人审核后交财务部门复核。</p></article></body></html>")
    site.pages["/"] = Resource(html.encode("gbk"), "text/html")
    items, _ = scan(site, max_depth=0)
    text = items[site.url("/")].data.decode("utf-8")
    assert "# 报销流程" in text and "十个工作日内提交报销申请" in text
