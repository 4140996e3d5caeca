"""Yuque end to end: manage.py source_add / source_run against the Yuque OpenAPI server on loopback; after an edit
at the source the run's counts are right and a search finds the new text, not the old."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from knowledge.models import Document, DocumentStatus
from tests.helpers import searched
from tests.sources.yuque_server import YuqueServer

pytestmark = pytest.mark.django_db

COUNTS = ("status", "added", "updated", "unchanged", "removed", "failed")
TABLE = "<table><tr><td>版本</td><td>年费</td></tr><tr><td>专业版</td><td>一万二千元</td></tr></table>"


def command(*args) -> dict:
    out = StringIO()
    call_command(*args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_yuque_book_syncs_through_the_commands_and_search_follows(kb, alice, settings, django_capture_on_commit_callbacks):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True
    with YuqueServer() as yuque:
        yuque.put_doc("price", "价格说明", fmt="lake", body="<!doctype lake>",
                      body_html=f"<h2>价格</h2><p>专业版的年费是一万二千元，包含培训。</p>{TABLE}")
        yuque.put_doc("faq", "常见问题", body="## 登录\n\n登录问题请联系管理员。")
        yuque.put_doc("notice", "旧公告", body="系统将于周五停机维护。")
        added = command("source_add", "--kb", kb.name, "--owner", "alice", "--kind", "yuque", "--name", "语雀知识库",
                        "--setting", f"base_url={yuque.base_url}", "--setting", f"namespace={yuque.namespace}",
                        "--credential", f"token={yuque.token}")
        with django_capture_on_commit_callbacks(execute=True):
            first = command("source_run", str(added["id"]))
        assert {k: first[k] for k in COUNTS} == {"status": "succeeded", "added": 3, "updated": 0, "unchanged": 0,
                                                  "removed": 0, "failed": 0}
        price = Document.objects.get(kb=kb, source_name="价格说明.html", status=DocumentStatus.READY)
        assert price.source_url == f"{yuque.base_url}/team/handbook/price"

        yuque.put_doc("price", "价格说明", fmt="lake", body="<!doctype lake>", updated="2026-11-30T08:00:00.000Z",
                      body_html="<h2>价格</h2><p>旗舰版的月费是九百九十九元，不含培训。</p>")
        yuque.delete_doc("notice")
        yuque.put_doc("changelog", "更新日志", body="新增语雀知识库同步。")
        with django_capture_on_commit_callbacks(execute=True):
            second = command("source_run", str(added["id"]))
    assert {k: second[k] for k in COUNTS} == {"status": "succeeded", "added": 1, "updated": 1, "unchanged": 1,
                                               "removed": 1, "failed": 0}
    new = searched(user=alice, query="旗舰版月费九百九十九元", kbs=[kb])
    assert new.hit and any("九百九十九" in c.content for c in new.candidates)
    old = searched(user=alice, query="专业版年费一万二千元", kbs=[kb])
    assert not any("一万二千" in c.content for c in old.candidates)
    assert not Document.objects.filter(kb=kb, source_name="旧公告.md").exists()


def test_yuque_source_add_refuses_bad_settings(kb, alice):
    with pytest.raises(CommandError, match="source_settings_invalid"):
        command("source_add", "--kb", kb.name, "--owner", "alice", "--kind", "yuque", "--setting", "namespace=no way",
                "--credential", "token=x")
