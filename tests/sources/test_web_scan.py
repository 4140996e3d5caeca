"""The web connector against a site on loopback: what a first scan keeps, then what a second and third scan
yield after the site changed (Fetched / Unchanged / gone / Failed), with conditional requests and stored links."""
from __future__ import annotations

import pytest

from sources.kinds.base import Failed, Fetched, Unchanged
from tests.sources.web_fixtures import FOOTER, INSTALL_V2, NAV, build_site, kinds, layout, remember, scan
from tests.sources.web_server import Resource, Site, page


@pytest.fixture
def site(settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True
    with Site() as running:
        build_site(running)
        yield running


def test_first_scan_keeps_pages_and_files_of_the_site_only(site):
    items, result = scan(site)
    paths = kinds(items)
    assert set(paths) == {"/", "/guide/install", "/guide/config.html", "/zh/policy", "/files/report.pdf",
                          "/files/notes.docx", "/broken", "/old", "/deep"}
    assert paths["/broken"] == "failed" and items[site.url("/broken")].code == "web_http_status"
    assert not result.complete and "failed before" in result.note   # links behind /broken are unknown
    # robots.txt: the disallowed page was never requested; nor the picture, nor anything off the site
    assert "/private/secret" not in site.requested() and "/logo.png" not in site.requested()
    assert all(headers["User-Agent"].startswith("zhiku-bot/") for _path, headers in site.log)


def test_pages_become_markdown_without_the_site_chrome(site):
    items, _ = scan(site)
    install = items[site.url("/guide/install")]
    assert isinstance(install, Fetched)
    assert install.name == f"127.0.0.1:{site.port}/guide/install.md"
    assert install.url == site.url("/guide/install") and install.title == "Installing the server"
    assert install.revision == '"install-1"'
    text = install.data.decode()
    assert "# Installing the server" in text and "## Requirements" in text and "ALPHAWORD" in text
    for chrome in (NAV, FOOTER, "HEADERWORD", "关于我们"):
        assert chrome not in text, chrome
    policy = items[site.url("/zh/policy")].data.decode()
    assert "# 差旅费管理办法" in policy and "## 住宿标准" in policy
    assert "| 城市类别 | 职级 | 住宿上限（元/晚） |" in policy
    assert "| 一类城市 | 经理 | 700 |" in policy
    # the query's tracking parameter is dropped; the .html suffix becomes .md; Last-Modified is the revision
    config = items[site.url("/guide/config.html")]
    assert config.name.endswith("/guide/config.md") and config.revision == site.pages["/guide/config.html"].last_modified
    # no validators: the revision is the content's hash
    assert items[site.url("/deep")].revision.startswith("sha256:")


def test_linked_files_keep_their_bytes_and_extension(site):
    items, _ = scan(site)
    pdf = items[site.url("/files/report.pdf")]
    assert pdf.name.endswith("/files/report.pdf") and pdf.data == site.pages["/files/report.pdf"].body
    notes = items[site.url("/files/notes.docx")]   # served as octet-stream: the extension decides
    assert notes.name.endswith("/files/notes.docx") and notes.data.startswith(b"PK")
    items, _ = scan(site, files=False)
    assert site.url("/files/report.pdf") not in items and site.url("/files/notes.docx") not in items


def test_second_scan_fetches_only_what_changed(site):
    first, _ = scan(site)
    known = remember({}, first)
    site.pages["/guide/install"] = page(layout("Installing the server", INSTALL_V2), etag='"install-2"')
    site.pages["/guide/new"] = page(layout("Upgrade notes", "<h1>Upgrade notes</h1><p>NEWWORD " + "upgrade " * 40 + "</p>"))
    del site.pages["/old"]                                    # now a 404
    site.pages["/broken"] = page(layout("Fixed", "<h1>Fixed now</h1><p>" + "repaired " * 40 + "</p>"))
    site.clear_log()
    second, result = scan(site, known)
    assert result.complete, result.note
    assert kinds(second) == {
        "/": "unchanged", "/guide/install": "fetched", "/guide/new": "fetched", "/guide/config.html": "unchanged",
        "/deep": "unchanged", "/zh/policy": "unchanged", "/files/report.pdf": "unchanged",
        "/files/notes.docx": "unchanged", "/broken": "fetched",
    }                                                         # "/old" is missing: removed after this complete scan
    assert "BRAVOWORD" in second[site.url("/guide/install")].data.decode()
    assert second[site.url("/guide/install")].revision == '"install-2"'
    # conditional requests: the stored ETag and Last-Modified went out, and came back 304
    sent = {path: headers for path, headers in site.log}
    assert sent["/"]["If-None-Match"] == '"home-1"'
    assert sent["/guide/config.html"]["If-Modified-Since"] == site.pages["/guide/config.html"].last_modified
    # the walk went on through the unchanged config page's stored links to /deep
    assert "/deep" in sent


def test_a_known_page_that_fails_keeps_serving_and_the_walk_goes_through_it(site):
    site.pages["/broken"] = page(layout("Fixed", "<h1>Fixed now</h1><p>" + "repaired " * 40 + "</p>"))
    known = remember({}, scan(site)[0])
    site.pages["/guide/config.html"] = Resource(b"down", "text/plain", status=503)
    items, result = scan(site, known)
    failed = items[site.url("/guide/config.html")]
    assert isinstance(failed, Failed) and failed.code == "web_http_status" and "503" in failed.message
    assert isinstance(items[site.url("/deep")], Unchanged)   # reached through the stored links
    assert result.complete, result.note


def test_a_server_that_ignores_validators_still_gives_unchanged(site):
    for resource in site.pages.values():
        resource.etag = resource.last_modified = ""
    known = remember({}, scan(site)[0])
    items, _ = scan(site, known)
    assert isinstance(items[site.url("/guide/install")], Unchanged)
    assert isinstance(items[site.url("/files/report.pdf")], Unchanged)
    home = items[site.url("/")]   # the links read again are handed back with the Unchanged
    assert isinstance(home, Unchanged) and site.url("/zh/policy") in home.state["links"]
