"""The Feishu connector against a Feishu open platform on loopback (tests/sources/feishu_server.py): a scan of a wiki
space with nested pages, then edits, an addition and a deletion, and a second scan with what the first one kept."""
from __future__ import annotations

import pytest

from core.errors import CODES
from knowledge.parsers import parse_file
from sources.kinds.base import Failed, Fetched, Known, Limits, ScanResult, SourceError, Unchanged, connector_for
from tests.sources.feishu_server import FeishuServer

MANUAL = [("h1", "安装"), ("p", "下载安装包后运行安装程序。"), ("h2", "参数"),
          ("table", [["参数", "说明"], ["timeout", "超时时间（秒）"], ["retries", "重试次数"]]),
          ("bullet", "第一步", [("bullet", "细节")]), ("image",), ("h2", "结语"), ("p", "祝使用愉快。")]


def _space(server: FeishuServer) -> None:
    server.put_node("wikManual", "产品手册", parts=MANUAL)
    server.put_node("wikFaq", "常见问题", parts=[("h1", "登录"), ("p", "忘记密码请联系管理员。")])
    server.put_node("wikSheet", "报价表", obj_type="sheet")                  # not a document; its child is
    server.put_node("wikUnderSheet", "报价说明", parent="wikSheet")
    server.put_node("wikGuide", "开发指南", parent="wikFaq")
    server.put_node("wikDeep", "接口约定", parent="wikGuide", edit_time=1700000100)
    server.put_node("wikOld", "旧版文档", obj_type="doc")


@pytest.fixture
def server(settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True
    with FeishuServer() as feishu:
        _space(feishu)
        yield feishu


def _connector(server: FeishuServer, secret: str = "s3cret", **settings):
    cls = connector_for("feishu")
    config = {"base_url": server.base_url, "app_id": server.app_id, "space_id": server.space_id, **settings}
    return cls(cls.clean_settings(config), {"app_secret": secret}, limits=Limits(max_items=100, timeout_s=5))


def _scan(connector, known=None):
    result = ScanResult()
    items = list(connector.scan(known or {}, result, lambda: False))
    return items, result


def test_first_scan_fetches_every_docx_page_of_the_tree_through_every_page(server):
    items, result = _scan(_connector(server))
    assert result.complete
    assert all(isinstance(item, Fetched) for item in items)
    assert sorted(item.key for item in items) == ["wikDeep", "wikFaq", "wikGuide", "wikManual", "wikUnderSheet"]
    # the top level has 4 nodes in pages of 2 (two requests), then wikFaq's, wikGuide's and wikSheet's children;
    # the manual's 22 blocks come 3 at a time (eight requests)
    assert server.hits[f"/open-apis/wiki/v2/spaces/{server.space_id}/nodes"] == 2 + 3
    assert server.hits["/open-apis/docx/v1/documents/doxcnwikManual/blocks"] == 8
    assert server.issued == 1                  # one tenant token for the whole scan
    manual = next(item for item in items if item.key == "wikManual")
    assert manual.name == "产品手册.md" and manual.title == "产品手册"
    assert manual.url.endswith("/wiki/wikManual")
    assert manual.state["document_id"] == "doxcnwikManual"


def test_markdown_has_the_title_headings_list_and_table(server):
    items, _ = _scan(_connector(server))
    text = next(item for item in items if item.key == "wikManual").data.decode()
    assert text.startswith("# 产品手册\n")
    assert "\n# 安装\n" in text and "\n## 参数\n" in text
    assert "| 参数 | 说明 |\n| --- | --- |\n| timeout | 超时时间（秒） |\n| retries | 重试次数 |" in text
    assert "- 第一步\n    - 细节" in text
    assert "boxcnImage" not in text
    parsed = parse_file("产品手册.md", text.encode())
    assert [(b.level, b.text) for b in parsed.blocks if b.kind == "heading"][:3] == [
        (1, "产品手册"), (1, "安装"), (2, "参数")]
    assert [b.rows for b in parsed.blocks if b.kind == "table"] == [
        (("参数", "说明"), ("timeout", "超时时间（秒）"), ("retries", "重试次数"))]


def test_second_scan_after_edit_add_delete(server):
    connector = _connector(server)
    first, _ = _scan(connector)
    known = {item.key: Known(item.revision, item.state) for item in first}
    server.put_node("wikFaq", "常见问题", edit_time=1700009999, parts=[("h1", "登录"), ("p", "密码可在设置页自助重置。")])
    server.put_node("wikNew", "发布说明", parts=[("h1", "2.0 版"), ("p", "新增飞书同步。")])
    server.delete_node("wikDeep")
    second, result = _scan(connector, known)
    assert result.complete
    by_key = {item.key: item for item in second}
    assert "wikDeep" not in by_key                                   # deleted at the source: the runner removes it
    assert isinstance(by_key["wikFaq"], Fetched) and "自助重置" in by_key["wikFaq"].data.decode()
    assert "联系管理员" not in by_key["wikFaq"].data.decode()
    assert isinstance(by_key["wikNew"], Fetched) and "新增飞书同步" in by_key["wikNew"].data.decode()
    assert {k for k, v in by_key.items() if isinstance(v, Unchanged)} == {"wikManual", "wikGuide", "wikUnderSheet"}
    assert server.hits["/open-apis/docx/v1/documents/doxcnwikManual/blocks"] == 8   # not read again (8 = first scan)


def test_a_renamed_page_is_fetched_again(server):
    connector = _connector(server)
    first, _ = _scan(connector)
    known = {item.key: Known(item.revision, item.state) for item in first}
    node = server.nodes["wikGuide"]
    node["title"] = "开发者指南"        # a rename does not touch obj_edit_time
    second, _ = _scan(connector, known)
    assert isinstance(next(i for i in second if i.key == "wikGuide"), Fetched)


def test_wrong_secret_is_source_auth_failed(server):
    with pytest.raises(SourceError) as caught:
        _scan(_connector(server, secret="wrong"))
    assert caught.value.code == "source_auth_failed" and "10014" in caught.value.message
    assert "source_auth_failed" in CODES


def test_rate_limit_is_waited_out_and_retried(server):
    server.throttle_next = 2
    items, result = _scan(_connector(server))
    assert server.throttled == 2 and result.complete and len(items) == 5


def test_endless_rate_limit_stops_the_scan(server):
    server.throttle_next = 100
    with pytest.raises(SourceError) as caught:
        _scan(_connector(server))
    assert caught.value.code == "source_rate_limited"
    assert server.throttled == 4            # the first try and three retries


def test_a_revoked_token_is_renewed_once(server):
    connector = _connector(server)
    _scan(connector)
    server.revoke_tokens()
    items, result = _scan(connector)
    assert result.complete and len(items) == 5 and server.issued == 2


def test_a_document_the_app_may_not_read_fails_alone(server):
    server.forbidden.add("doxcnwikFaq")
    items, result = _scan(_connector(server))
    failed = [item for item in items if isinstance(item, Failed)]
    assert [(f.key, f.code) for f in failed] == [("wikFaq", "source_item_forbidden")]
    assert result.complete and sum(isinstance(item, Fetched) for item in items) == 4


def test_unknown_space_is_refused_as_a_whole(server):
    with pytest.raises(SourceError) as caught:
        _scan(_connector(server, space_id="123"))
    assert caught.value.code == "feishu_space_unavailable"


def test_max_items_cuts_the_scan_short(server):
    cls = connector_for("feishu")
    connector = cls({"base_url": server.base_url, "app_id": server.app_id, "space_id": server.space_id},
                    {"app_secret": "s3cret"}, limits=Limits(max_items=2, timeout_s=5))
    items, result = _scan(connector)
    assert len(items) == 2 and not result.complete


def test_loopback_is_refused_without_the_private_switch(server, settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = False
    with pytest.raises(SourceError) as caught:
        _scan(_connector(server))
    assert caught.value.code == "source_address_refused" and server.issued == 0


@pytest.mark.parametrize("settings_, field", [
    ({"app_id": "cli_x", "space_id": "1", "base_url": "ftp://open.feishu.cn"}, "base_url"),
    ({"space_id": "1"}, "app_id"),
    ({"app_id": "cli_x", "space_id": "a b"}, "space_id"),
    ({"app_id": "cli_x", "space_id": "1", "folder": "x"}, "folder"),
])
def test_clean_settings_names_the_wrong_field(settings_, field):
    with pytest.raises(SourceError) as caught:
        connector_for("feishu").clean_settings(settings_)
    assert caught.value.code == "source_settings_invalid" and field in caught.value.message


def test_clean_settings_defaults_to_feishu_and_keeps_lark():
    cls = connector_for("feishu")
    assert cls.clean_settings({"app_id": "cli_x", "space_id": "1"})["base_url"] == "https://open.feishu.cn"
    lark = cls.clean_settings({"app_id": "cli_x", "space_id": "1", "base_url": "https://open.larksuite.com/"})
    assert lark["base_url"] == "https://open.larksuite.com"
    connector = cls(lark, {"app_secret": "x"}, limits=Limits())
    assert connector.web_url == "https://www.larksuite.com"


def test_a_cancelled_scan_is_incomplete(server):
    calls = []

    def cancelled():
        calls.append(1)
        return len(calls) > 6       # the walk's four listings, then two documents

    result = ScanResult()
    items = list(_connector(server).scan({}, result, cancelled))
    assert len(items) == 2 and not result.complete and result.note == "cancelled"


def test_the_console_offers_feishu_and_yuque_with_their_forms():
    from sources.catalog import kinds

    offered = {k.kind: k for k in kinds()}
    feishu, yuque = offered["feishu"], offered["yuque"]
    assert feishu.secret_fields == ("app_secret",) and yuque.secret_fields == ("token",)
    assert [f.name for f in feishu.settings_fields] == ["base_url", "app_id", "space_id", "folder_token", "web_url"]
    assert [f.name for f in yuque.settings_fields] == ["base_url", "namespace"]
