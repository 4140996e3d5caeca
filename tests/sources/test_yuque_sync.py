"""The Yuque connector against a Yuque OpenAPI server on loopback (tests/sources/yuque_server.py): a scan of a book
with Markdown and Lake documents, then an edit, an addition and a deletion, and a second scan with what the first
one kept. The files it yields go through the platform's own parsers, which must find the headings and tables."""
from __future__ import annotations

import pytest

from core.errors import CODES
from knowledge.parsers import parse_file
from sources.kinds.base import Failed, Fetched, Known, Limits, ScanResult, SourceError, Unchanged, connector_for
from tests.sources.yuque_server import YuqueServer

MARKDOWN = "## 安装\n\n下载后运行。\n\n## 参数\n\n| 参数 | 说明 |\n| --- | --- |\n| timeout | 超时时间 |\n"
LAKE_HTML = ("<h2 id=\"a1\">部署</h2><p>使用 Docker Compose 部署。</p>"
             "<table><tbody><tr><td>服务</td><td>端口</td></tr><tr><td>web</td><td>8000</td></tr></tbody></table>")


def _book(server: YuqueServer) -> None:
    server.put_doc("intro", "产品介绍", body=MARKDOWN)
    server.put_doc("deploy", "部署指南", body="<!doctype lake><h2>部署</h2>", body_html=LAKE_HTML, fmt="lake")
    server.put_doc("faq", "常见问题", body="## 登录\n\n忘记密码请联系管理员。")
    server.put_doc("draft", "草稿", body="还没写完", status=0)
    server.put_doc("sheet", "预算表", type="Sheet", fmt="lakesheet")
    server.put_doc("notes", "会议记录", body="周会纪要。")


@pytest.fixture
def server(settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True
    with YuqueServer() as yuque:
        _book(yuque)
        yield yuque


def _connector(server: YuqueServer, token: str = "yq-token-1234", namespace: str = "team/handbook", limits=None):
    cls = connector_for("yuque")
    settings = cls.clean_settings({"base_url": server.base_url, "namespace": namespace})
    return cls(settings, {"token": token}, limits=limits or Limits(max_items=100, timeout_s=5))


def _scan(connector, known=None):
    result = ScanResult()
    return list(connector.scan(known or {}, result, lambda: False)), result


def test_first_scan_fetches_published_documents_page_by_page(server):
    items, result = _scan(_connector(server))
    assert result.complete and all(isinstance(i, Fetched) for i in items)
    assert sorted(i.name for i in items) == ["产品介绍.md", "会议记录.md", "常见问题.md", "部署指南.html"]
    assert server.hits["/api/v2/repos/team/handbook/docs"] == 3       # six documents, two a page
    intro = next(i for i in items if i.name == "产品介绍.md")
    assert intro.url == f"{server.base_url}/team/handbook/intro" and intro.title == "产品介绍"
    assert server.agents == {"zhiku-sources/1.0 (knowledge-base sync)"}


def test_markdown_and_lake_documents_parse_with_headings_and_tables(server):
    items, _ = _scan(_connector(server))
    by_name = {i.name: i for i in items}
    intro = parse_file("产品介绍.md", by_name["产品介绍.md"].data)
    assert [(b.level, b.text) for b in intro.blocks if b.kind == "heading"] == [(1, "产品介绍"), (2, "安装"), (2, "参数")]
    assert [b.rows for b in intro.blocks if b.kind == "table"] == [(("参数", "说明"), ("timeout", "超时时间"))]
    deploy = parse_file("部署指南.html", by_name["部署指南.html"].data)
    assert deploy.title == "部署指南"
    assert [(b.level, b.text) for b in deploy.blocks if b.kind == "heading"] == [(1, "部署指南"), (2, "部署")]
    assert [b.rows for b in deploy.blocks if b.kind == "table"] == [(("服务", "端口"), ("web", "8000"))]


def test_second_scan_after_edit_add_delete(server):
    connector = _connector(server)
    first, _ = _scan(connector)
    known = {i.key: Known(i.revision, i.state) for i in first}
    server.put_doc("faq", "常见问题", body="## 登录\n\n密码可在设置页自助重置。", updated="2026-11-20T08:00:00.000Z")
    server.put_doc("release", "发布说明", body="新增语雀同步。")
    server.delete_doc("notes")
    second, result = _scan(connector, known)
    assert result.complete
    by_key = {i.key: i for i in second}
    names = {i.key: i.name for i in first}
    faq_key = next(k for k, n in names.items() if n == "常见问题.md")
    notes_key = next(k for k, n in names.items() if n == "会议记录.md")
    assert notes_key not in by_key
    assert isinstance(by_key[faq_key], Fetched) and "自助重置" in by_key[faq_key].data.decode()
    assert "联系管理员" not in by_key[faq_key].data.decode()
    added = [i for i in second if isinstance(i, Fetched) and i.name == "发布说明.md"]
    assert len(added) == 1 and "新增语雀同步" in added[0].data.decode()
    assert sorted(names[k] for k, i in by_key.items() if isinstance(i, Unchanged)) == ["产品介绍.md", "部署指南.html"]
    assert server.hits["/api/v2/repos/team/handbook/docs/intro"] == 1     # not read again


def test_book_id_works_as_the_namespace_and_links_use_the_book_path(server):
    items, _ = _scan(_connector(server, namespace=str(server.book_id)))
    assert len(items) == 4 and all(i.url.startswith(f"{server.base_url}/team/handbook/") for i in items)


def test_wrong_token_is_source_auth_failed(server):
    with pytest.raises(SourceError) as caught:
        _scan(_connector(server, token="wrong"))
    assert caught.value.code == "source_auth_failed" and "source_auth_failed" in CODES


def test_unknown_book_is_yuque_repo_not_found(server):
    with pytest.raises(SourceError) as caught:
        _scan(_connector(server, namespace="team/missing"))
    assert caught.value.code == "yuque_repo_not_found" and "yuque_repo_not_found" in CODES


def test_rate_limit_is_waited_out_and_retried(server):
    server.throttle_next = 1
    items, result = _scan(_connector(server))
    assert server.throttled == 1 and result.complete and len(items) == 4


def test_endless_rate_limit_stops_the_scan(server):
    server.throttle_next = 100
    with pytest.raises(SourceError) as caught:
        _scan(_connector(server))
    assert caught.value.code == "source_rate_limited" and server.throttled == 4


def test_a_document_the_token_may_not_read_fails_alone(server):
    server.forbidden.add("faq")
    items, result = _scan(_connector(server))
    assert [(i.code) for i in items if isinstance(i, Failed)] == ["source_item_forbidden"]
    assert result.complete and sum(isinstance(i, Fetched) for i in items) == 3


def test_an_oversized_document_fails_alone(server):
    server.put_doc("big", "大文件", body="长" * 5000)
    items, _ = _scan(_connector(server, limits=Limits(max_items=100, max_bytes_per_item=4096, timeout_s=5)))
    failed = [i for i in items if isinstance(i, Failed)]
    assert [i.code for i in failed] == ["source_item_too_large"]


def test_max_items_cuts_the_scan_short(server):
    items, result = _scan(_connector(server, limits=Limits(max_items=2, timeout_s=5)))
    assert len(items) == 2 and not result.complete


def test_same_titles_get_the_key_in_their_names(server):
    server.put_doc("faq-2", "常见问题", body="另一份。")
    items, _ = _scan(_connector(server))
    names = sorted(i.name for i in items if i.name.startswith("常见问题"))
    assert len(names) == 2 and all(n.startswith("常见问题 (") and n.endswith(").md") for n in names)


@pytest.mark.parametrize("settings_, field", [
    ({"namespace": "not a namespace"}, "namespace"),
    ({}, "namespace"),
    ({"namespace": "a/b", "base_url": "javascript:alert(1)"}, "base_url"),
    ({"namespace": "a/b", "token": "x"}, "token"),
])
def test_clean_settings_names_the_wrong_field(settings_, field):
    with pytest.raises(SourceError) as caught:
        connector_for("yuque").clean_settings(settings_)
    assert caught.value.code == "source_settings_invalid" and field in caught.value.message


def test_clean_settings_defaults_to_yuque_com():
    cleaned = connector_for("yuque").clean_settings({"namespace": "yuque/developer"})
    assert cleaned == {"base_url": "https://www.yuque.com", "namespace": "yuque/developer"}


def test_a_lake_document_without_body_html_reads_its_lake_markup(server):
    server.put_doc("lakeonly", "只有 Lake", fmt="lake", body="<!doctype lake><h2>配置</h2><p>端口 8000。</p>"
                   "<card type=\"inline\" name=\"image\" value=\"data:x\"></card>")
    items, _ = _scan(_connector(server))
    item = next(i for i in items if i.name == "只有 Lake.html")
    parsed = parse_file(item.name, item.data)
    assert [(b.level, b.text) for b in parsed.blocks if b.kind == "heading"] == [(1, "只有 Lake"), (2, "配置")]
    assert any("端口 8000" in b.text for b in parsed.blocks)


def test_a_cancelled_scan_is_incomplete(server):
    calls = []

    def cancelled():
        calls.append(1)
        return len(calls) > 2

    result = ScanResult()
    items = list(_connector(server).scan({}, result, cancelled))
    assert len(items) == 2 and not result.complete and result.note == "cancelled"


def test_a_server_that_drips_its_answer_is_given_up(settings):
    """Headers at once, then one byte every 0.1 s: no socket timeout trips, the whole-answer deadline does."""
    import socket
    import threading
    import time

    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def drip():
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
            while not stop.is_set():
                try:
                    conn.sendall(b" ")
                except OSError:
                    return
                time.sleep(0.1)

    thread = threading.Thread(target=drip, daemon=True)
    thread.start()
    cls = connector_for("yuque")
    base = f"http://127.0.0.1:{listener.getsockname()[1]}"
    connector = cls(cls.clean_settings({"base_url": base, "namespace": "a/b"}), {"token": "t"},
                    limits=Limits(timeout_s=0.3))
    try:
        with pytest.raises(SourceError) as caught:
            list(connector.scan({}, ScanResult(), lambda: False))
        assert caught.value.code == "source_unreachable" and "to send one answer" in caught.value.message
    finally:
        stop.set()
        listener.close()
