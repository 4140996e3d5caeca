"""The Git connector over smart HTTP (git http-backend on loopback) with a token the server checks.

The token travels as an Authorization header, never in the URL; a wrong or missing token is
``source_auth_failed``; the second scan asks the server only for the blobs that changed.
"""
from __future__ import annotations

import base64

import pytest

from sources.kinds.base import Fetched, Known, Limits, ScanResult, SourceError, Unchanged, connector_for
from tests.sources.git_server import GitSource, SmartHTTPServer

TOKEN = "glpat-0123456789abcdef"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("git-http")
    source = GitSource(root / "team" / "docs")
    source.write("README.md", "# 团队文档\n\n第一版。\n")
    source.write("guide/setup.md", "# 安装\n")
    source.commit("first")
    with SmartHTTPServer(root, TOKEN) as server:
        yield server, source


@pytest.fixture(autouse=True)
def private(settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True


def scan(url, credentials, known=None):
    connector = connector_for("git")({"url": url}, credentials, limits=Limits())
    result = ScanResult()
    try:
        return list(connector.scan(known or {}, result, lambda: False)), result
    finally:
        connector.close()


def test_token_scan_then_incremental(served):
    server, source = served
    server.requests.clear()
    server.seen_auth.clear()
    items, result = scan(server.url("team/docs"), {"token": TOKEN})
    assert {i.key: i.data.decode() for i in items} == {"README.md": "# 团队文档\n\n第一版。\n", "guide/setup.md": "# 安装\n"}
    assert result.complete
    assert all(TOKEN not in path for path in server.requests)
    expected = "Basic " + base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    assert expected in server.seen_auth
    # the clone, then one more connection for both blobs (not one per blob)
    assert sum("info/refs" in p for p in server.requests) == 2

    source.write("README.md", "# 团队文档\n\n第二版。\n")
    source.write("guide/faq.md", "# 常见问题\n")
    source.write("guide/more.md", "# 更多\n")
    source.commit("second")
    known = {i.key: Known(i.revision) for i in items}
    server.requests.clear()
    items, result = scan(server.url("team/docs"), {"token": TOKEN}, known)
    assert [(type(i), i.key) for i in items] == [(Fetched, "README.md"), (Fetched, "guide/faq.md"),
                                                 (Fetched, "guide/more.md"), (Unchanged, "guide/setup.md")]
    assert "第二版" in items[0].data.decode()
    assert sum("info/refs" in p for p in server.requests) == 2     # three changed blobs, one request


@pytest.mark.parametrize("credentials", [{"token": "wrong-token"}, {}, {"token": TOKEN + "\r\nX-Injected: 1"}])
def test_wrong_or_missing_token_is_an_auth_failure(served, credentials):
    server, _ = served
    with pytest.raises(SourceError) as caught:
        scan(server.url("team/docs"), credentials)
    assert caught.value.code == "source_auth_failed"
    assert "wrong-token" not in caught.value.message


def test_unknown_repository(served):
    server, _ = served
    with pytest.raises(SourceError) as caught:
        scan(server.url("team/absent"), {"token": TOKEN})
    assert caught.value.code == "git_repository_not_found"


def test_unreachable_server(served):
    server, _ = served
    port = server.server_address[1]
    with SmartHTTPServer(server.root, TOKEN) as spare:      # a port that is free once this server closes
        dead = spare.url("team/docs")
    assert str(port) not in dead
    with pytest.raises(SourceError) as caught:
        scan(dead, {"token": TOKEN})
    assert caught.value.code == "source_unreachable"
