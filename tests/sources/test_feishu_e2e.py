"""Feishu end to end: manage.py source_add / source_run against the Feishu open platform on loopback; after an edit
at the source the run's counts are right and a search finds the new text, not the old."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from knowledge.models import Document, DocumentStatus
from tests.helpers import searched
from tests.sources.feishu_server import FeishuServer

pytestmark = pytest.mark.django_db

COUNTS = ("status", "added", "updated", "unchanged", "removed", "failed")


def command(*args) -> dict:
    out = StringIO()
    call_command(*args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_feishu_space_syncs_through_the_commands_and_search_follows(kb, alice, settings, django_capture_on_commit_callbacks):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True
    with FeishuServer() as feishu:
        feishu.put_node("wikPrice", "价格说明", parts=[("h1", "价格"), ("p", "专业版的年费是一万二千元，包含培训。"),
                                                   ("table", [["版本", "年费"], ["专业版", "一万二千元"]])])
        feishu.put_node("wikFaq", "常见问题", parts=[("p", "登录问题请联系管理员。")])
        feishu.put_node("wikGone", "旧公告", parent="wikFaq", parts=[("p", "系统将于周五停机维护。")])
        added = command("source_add", "--kb", kb.name, "--owner", "alice", "--kind", "feishu", "--name", "飞书知识库",
                        "--setting", f"base_url={feishu.base_url}", "--setting", f"app_id={feishu.app_id}",
                        "--setting", f"space_id={feishu.space_id}", "--credential", "app_secret=s3cret")
        with django_capture_on_commit_callbacks(execute=True):
            first = command("source_run", str(added["id"]))
        assert {k: first[k] for k in COUNTS} == {"status": "succeeded", "added": 3, "updated": 0, "unchanged": 0,
                                                  "removed": 0, "failed": 0}
        price = Document.objects.get(kb=kb, source_name="价格说明.md", status=DocumentStatus.READY)
        assert price.source_url.endswith("/wiki/wikPrice")

        feishu.put_node("wikPrice", "价格说明", edit_time=1700050000,
                        parts=[("h1", "价格"), ("p", "旗舰版的月费是九百九十九元，不含培训。")])
        feishu.delete_node("wikGone")
        feishu.put_node("wikNew", "更新日志", parts=[("p", "新增飞书知识库同步。")])
        with django_capture_on_commit_callbacks(execute=True):
            second = command("source_run", str(added["id"]))
    assert {k: second[k] for k in COUNTS} == {"status": "succeeded", "added": 1, "updated": 1, "unchanged": 1,
                                               "removed": 1, "failed": 0}
    new = searched(user=alice, query="旗舰版月费九百九十九元", kbs=[kb])
    assert new.hit and any("九百九十九" in c.content for c in new.candidates)
    old = searched(user=alice, query="专业版年费一万二千元", kbs=[kb])
    assert not any("一万二千" in c.content for c in old.candidates)
    assert not Document.objects.filter(kb=kb, source_name="旧公告.md").exists()


def test_feishu_source_add_refuses_bad_settings(kb, alice):
    with pytest.raises(CommandError, match="source_settings_invalid"):
        command("source_add", "--kb", kb.name, "--owner", "alice", "--kind", "feishu", "--setting", "app_id=cli_x",
                "--credential", "app_secret=x")
