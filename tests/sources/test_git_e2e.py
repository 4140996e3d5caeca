"""A Git source end to end: manage.py source_add / source_run against git http-backend on loopback with a token,
then a commit that modifies, adds, deletes and renames; the counts, the documents' links, and a search that
finds the new text and not the old."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from knowledge.models import Document, DocumentStatus
from tests.helpers import searched
from tests.sources.git_server import GitSource, SmartHTTPServer

pytestmark = pytest.mark.django_db
TOKEN = "e2e-token-7f3a"


def command(*args) -> dict:
    out = StringIO()
    call_command(*args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def counts(line: dict) -> dict:
    return {k: line[k] for k in ("status", "added", "updated", "unchanged", "removed", "failed")}


def texts(kb, user, query: str) -> str:
    result = searched(user=user, query=query, kbs=[kb])
    return " ".join(c.content for c in result.candidates) if result.hit else ""


def test_git_source_through_the_commands(kb, alice, tmp_path, settings, django_capture_on_commit_callbacks):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True
    repo = GitSource(tmp_path / "srv" / "team" / "handbook")
    repo.write("docs/pricing.md", "# 价格\n\n专业版的年费是一万二千元，包含培训。\n")
    repo.write("docs/support.md", "# 支持\n\n工作日九点到六点有人值班。\n")
    repo.write("docs/old-name.md", "# 退款\n\n三十天内可以无理由退款。\n")
    repo.write("docs/drop.md", "# 旧活动\n\n去年的促销已经结束。\n")
    repo.write("src/main.py", "print('not a document')\n")
    repo.commit("first")
    with SmartHTTPServer(tmp_path / "srv", TOKEN) as server:
        added = command("source_add", "--kb", kb.name, "--owner", "alice", "--kind", "git",
                        "--setting", f"url={server.url('team/handbook')}", "--setting", "paths=[\"docs\"]",
                        "--setting", "browse_url=https://git.example.com/team/handbook/-/blob/{commit}/{path}",
                        "--credential", f"token={TOKEN}")
        with django_capture_on_commit_callbacks(execute=True):
            first = command("source_run", str(added["id"]))
        assert counts(first) == {"status": "succeeded", "added": 4, "updated": 0, "unchanged": 0, "removed": 0,
                                 "failed": 0}
        assert repo.git("rev-parse", "HEAD") in first["note"]
        assert "一万二千" in texts(kb, alice, "专业版年费一万二千元")

        repo.write("docs/pricing.md", "# 价格\n\n旗舰版的月费是九百九十九元，不含培训。\n")
        repo.write("docs/new.md", "# 新功能\n\n支持从 Git 仓库同步文档。\n")
        repo.git("rm", "-q", "docs/drop.md")
        repo.git("mv", "docs/old-name.md", "docs/refunds.md")
        second_commit = repo.commit("second")
        with django_capture_on_commit_callbacks(execute=True):
            second = command("source_run", str(added["id"]))
    # refunds.md is the renamed file: a new name, so added; old-name.md and drop.md are removed
    assert counts(second) == {"status": "succeeded", "added": 2, "updated": 1, "unchanged": 1, "removed": 2,
                              "failed": 0}
    serving = set(Document.objects.filter(kb=kb, status=DocumentStatus.READY).values_list("source_name", flat=True))
    assert serving == {"docs/pricing.md", "docs/support.md", "docs/new.md", "docs/refunds.md"}
    # a changed file links to its page at the new commit
    pricing = Document.objects.get(kb=kb, status=DocumentStatus.READY, source_name="docs/pricing.md")
    assert pricing.source_url == f"https://git.example.com/team/handbook/-/blob/{second_commit}/docs/pricing.md"
    assert "九百九十九" in texts(kb, alice, "旗舰版月费九百九十九元")
    assert "一万二千" not in texts(kb, alice, "专业版年费一万二千元")
    assert "促销" not in texts(kb, alice, "去年的促销")
