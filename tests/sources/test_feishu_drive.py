"""The Feishu connector over a Drive folder (``folder_token``) on the loopback open platform: nested folders, docx
files only, incremental by ``modified_time``, links from the files' own ``url``; and a wiki space with a folder."""
from __future__ import annotations

import pytest

from sources.kinds.base import Fetched, Known, Limits, ScanResult, SourceError, Unchanged, connector_for
from tests.sources.feishu_server import FeishuServer


@pytest.fixture
def server(settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True
    with FeishuServer() as feishu:
        feishu.files["fldRoot"] = {"token": "fldRoot", "name": "资料", "type": "folder", "parent_token": ""}
        feishu.put_file("doxHandbook", "员工手册", parent="fldRoot", parts=[("h1", "考勤"), ("p", "每天九点上班。")])
        feishu.put_file("fldSub", "制度", kind="folder", parent="fldRoot")
        feishu.put_file("doxLeave", "请假制度", parent="fldSub", parts=[("p", "年假五天。")])
        feishu.put_file("shtBudget", "预算", kind="sheet", parent="fldRoot")
        feishu.put_file("doxTravel", "差旅规定", parent="fldSub")
        yield feishu


def _scan(server, known=None, **settings):
    cls = connector_for("feishu")
    config = cls.clean_settings({"base_url": server.base_url, "app_id": server.app_id, **settings})
    connector = cls(config, {"app_secret": "s3cret"}, limits=Limits(max_items=50, timeout_s=5))
    result = ScanResult()
    return list(connector.scan(known or {}, result, lambda: False)), result


def test_folder_tree_docx_files_then_an_edit_and_a_deletion(server):
    first, result = _scan(server, folder_token="fldRoot")
    assert result.complete and all(isinstance(i, Fetched) for i in first)
    assert sorted(i.key for i in first) == ["drive:doxHandbook", "drive:doxLeave", "drive:doxTravel"]
    leave = next(i for i in first if i.key == "drive:doxLeave")
    assert leave.url == "https://example.feishu.cn/docx/doxLeave" and "年假五天" in leave.data.decode()
    assert server.hits["/open-apis/drive/v1/files"] == 2 + 1      # fldRoot (3 entries, pages of 2), then fldSub (2)
    known = {i.key: Known(i.revision, i.state) for i in first}
    server.put_file("doxLeave", "请假制度", parent="fldSub", modified=1700090000, parts=[("p", "年假十天。")])
    del server.files["doxTravel"]
    second, result = _scan(server, known, folder_token="fldRoot")
    by_key = {i.key: i for i in second}
    assert result.complete and set(by_key) == {"drive:doxHandbook", "drive:doxLeave"}
    assert isinstance(by_key["drive:doxHandbook"], Unchanged)
    assert "年假十天" in by_key["drive:doxLeave"].data.decode()


def test_a_folder_not_shared_with_the_app_fails_the_source(server):
    server.forbidden.add("fldRoot")
    with pytest.raises(SourceError) as caught:
        _scan(server, folder_token="fldRoot")
    assert caught.value.code == "feishu_folder_unavailable"


def test_a_sub_folder_not_shared_makes_the_scan_incomplete(server):
    server.forbidden.add("fldSub")
    items, result = _scan(server, folder_token="fldRoot")
    assert [i.key for i in items] == ["drive:doxHandbook"] and not result.complete


def test_a_wiki_space_and_a_folder_together(server):
    server.put_node("wikHome", "首页", parts=[("p", "欢迎。")])
    items, result = _scan(server, space_id=server.space_id, folder_token="fldRoot")
    assert result.complete and sorted(i.key for i in items) == [
        "drive:doxHandbook", "drive:doxLeave", "drive:doxTravel", "wikHome"]


def test_neither_a_space_nor_a_folder_is_refused():
    with pytest.raises(SourceError) as caught:
        connector_for("feishu").clean_settings({"app_id": "cli_x"})
    assert caught.value.code == "source_settings_invalid" and "space_id or folder_token" in caught.value.message
