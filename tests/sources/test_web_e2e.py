"""A web site synced end to end: manage.py source_add --kind web, source_run twice with the site changed in
between; the counts, and a search that finds the new text (linking to the page) and not the old."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from knowledge.models import Document, DocumentStatus
from tests.helpers import searched
from tests.sources.web_fixtures import LONG, layout
from tests.sources.web_server import Resource, Site, page

pytestmark = pytest.mark.django_db

PRICING_V1 = ("<h1>价格说明</h1><p>专业版的年费是一万二千元，包含两次现场培训和一年的技术支持服务，"
              "续费时按当年价格计算。</p>")
PRICING_V2 = ("<h1>价格说明</h1><p>旗舰版的月费是九百九十九元，不含现场培训，技术支持通过在线工单提供，"
              "可随时取消订阅。</p>")


def command(*args) -> dict:
    out = StringIO()
    call_command(*args, stdout=out)
    lines = out.getvalue().strip().splitlines()
    assert len(lines) == 1, lines
    return json.loads(lines[0])


def found(kb, user, query: str):
    result = searched(user=user, query=query, kbs=[kb])
    return result.candidates if result.hit else []


def test_a_site_synced_twice_through_the_commands(kb, alice, settings, django_capture_on_commit_callbacks):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True
    with Site() as site:
        links = '<a href="/pricing">价格</a> <a href="/faq">问答</a> <a href="/old">旧页</a> <a href="/private/x">内部</a>'
        site.pages.update({
            "/robots.txt": Resource(b"User-agent: *\nDisallow: /private/\n", "text/plain"),
            "/": page(layout("星河文档", f"<h1>星河文档首页</h1>{LONG}", links), etag='"home-1"'),
            "/pricing": page(layout("价格说明", PRICING_V1), etag='"pricing-1"'),
            "/faq": page(layout("常见问题", f"<h1>常见问题</h1>{LONG}<p>问答页面介绍安装与升级步骤。</p>"),
                         last_modified="Tue, 01 Dec 2026 08:00:00 GMT"),
            "/old": page(layout("旧页面", f"<h1>旧页面</h1>{LONG}<p>这一页随后会被删除。</p>"), etag='"old-1"'),
            "/private/x": page(layout("内部", "<h1>内部资料</h1>")),
        })
        added = command("source_add", "--kb", kb.name, "--owner", "alice", "--kind", "web", "--url", site.url("/"),
                        "--max-pages", "20", "--setting", "delay_s=0")
        with django_capture_on_commit_callbacks(execute=True):
            first = command("source_run", str(added["id"]))
        assert (first["status"], first["added"], first["failed"], first["removed"]) == ("succeeded", 4, 0, 0), first
        ready = {d.source_name: d for d in Document.objects.filter(kb=kb, status=DocumentStatus.READY)}
        host = f"127.0.0.1:{site.port}"
        assert set(ready) == {f"{host}/index.md", f"{host}/pricing.md", f"{host}/faq.md", f"{host}/old.md"}
        assert ready[f"{host}/pricing.md"].source_url == site.url("/pricing")
        assert any("一万二千" in c.content for c in found(kb, alice, "专业版年费一万二千元"))

        site.pages["/pricing"] = page(layout("价格说明", PRICING_V2), etag='"pricing-2"')
        del site.pages["/old"]
        site.pages["/news"] = page(layout("新闻", f"<h1>新闻</h1>{LONG}<p>新版本发布。</p>"))
        site.pages["/"] = page(layout("星河文档", f"<h1>星河文档首页</h1>{LONG}",
                                      links + ' <a href="/news">新闻</a>'), etag='"home-2"')
        with django_capture_on_commit_callbacks(execute=True):
            second = command("source_run", str(added["id"]))
    # The home page has a new ETag (a new link) but the same main text: fetched, and the upload found the same
    # bytes, so it counts as unchanged; /faq answered 304; /pricing is updated, /news added, /old removed.
    assert {k: second[k] for k in ("status", "added", "updated", "unchanged", "removed", "failed")} == {
        "status": "succeeded", "added": 1, "updated": 1, "unchanged": 2, "removed": 1, "failed": 0}, second
    new = found(kb, alice, "旗舰版月费九百九十九元")
    assert new and "九百九十九" in new[0].content and new[0].source_url == site.url("/pricing")
    assert not any("一万二千" in c.content for c in found(kb, alice, "专业版年费一万二千元"))
    assert not Document.objects.filter(kb=kb, source_name=f"{host}/old.md").exists()
