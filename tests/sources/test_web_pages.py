"""Web pages read as a person reads them (docs/sources/web.md, "One document per page"): a loopback site whose pages
share a menu bar and a footer written in plain divs, which the main-content extractor keeps, so only comparing
the pages drops them; titles without the site's name; <h2> sections; aliases (/ and /index.html, a canonical link,
a redirect, a copy) as one document; the page URL on the documents and on a chat citation. Through source_run too."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from chat.prompts import citations_map, context_build
from knowledge.models import Chunk, Document, DocumentStatus
from sources.kinds.base import Fetched
from sources.kinds.web_extract import extract
from sources.kinds.web_pages import title_affix, trimmed
from tests.helpers import searched
from tests.sources.web_fixtures import kinds, remember, scan
from tests.sources.web_server import Resource, Site, page

MENU = "首页 | 产品手册 | 安装 | 价格 MENUWORD"
FOOTER = "知库科技 版权所有 SITEFOOTERWORD 京ICP备12345678号，地址：北京市海淀区中关村大街一号。"
COOKIE = "本站使用 Cookie 改善浏览体验 COOKIEWORD，继续浏览即表示您同意我们的隐私政策。"


def chrome(title: str, body: str, head: str = "") -> str:
    """A page as many sites write them: a menu, a cookie notice and a footer in divs, no <nav> / <footer>."""
    return f"""<!DOCTYPE html><html lang="zh"><head><meta charset="utf-8"><title>{title}</title>{head}</head>
<body><div id="page"><div class="topbar"><p><a href="/">首页</a> | <a href="/manual?from=menu">产品手册</a> |
<a href="/old-install">安装</a> | <a href="/pricing">价格</a> MENUWORD</p></div>
<div class="notice"><p>{COOKIE}</p></div>
<div class="content">{body}</div>
<div class="bottom"><p>{FOOTER}</p></div></div></body></html>"""


HOME = chrome("知库官网", """<h1>知库</h1><p>知库是企业知识库平台，把制度、手册和网页变成可以提问的知识，回答附带出处，
员工不必再翻找文件夹。</p><p><a href="/index.html">主页</a> <a href="/manual">手册</a> <a href="/pricing-copy">价格（旧址）</a></p>""")
MANUAL = chrome("产品手册 - 知库官网", """<h1>产品手册</h1>
<p>本手册介绍知库的日常使用：建立知识库、上传文档、连接数据源和在对话中引用出处。</p>
<h2>快速开始</h2><p>管理员先建立知识库，再邀请成员；成员上传文档后几分钟内即可检索，QUICKSTARTWORD 表示这一节。</p>
<h2>常见问题</h2><p>文档解析失败时，知识库页面会显示原因，修正文件后重新上传即可，旧版本在新版本就绪前继续服务。</p>""",
                head='<link rel="canonical" href="/manual">')
INSTALL = chrome("安装 - 知库官网", """<h1>安装</h1><p>知库以容器方式部署，安装程序会先检查操作系统和数据库版本，再复制文件。</p>
<h2>系统要求</h2><p>需要 PostgreSQL 16 和 Redis 7，内存不少于八 GB，磁盘空间不少于五十 GB，REQUIREWORD。</p>""")
PRICING = chrome("价格 - 知库官网", """<h1>价格</h1>
<p>专业版的年费是一万二千元，包含两次现场培训和一年的技术支持服务，续费时按当年价格计算。</p>
<p>旗舰版按席位计费，适合千人以上的企业，可以私有化部署并接入自有的大模型服务。</p>""")


def build(site: Site) -> None:
    site.pages.update({
        "/robots.txt": Resource(b"User-agent: *\nAllow: /\n", "text/plain"),
        "/": page(HOME), "/index.html": page(HOME),
        "/manual": page(MANUAL), "/manual?from=menu": page(MANUAL),
        "/old-install": Resource(status=301, location="/install"), "/install": page(INSTALL),
        "/pricing": page(PRICING), "/pricing-copy": page(PRICING),
    })


@pytest.fixture
def site():
    with Site() as served:
        build(served)
        yield served


def test_the_extractor_alone_keeps_the_menu_so_the_comparison_is_what_drops_it():
    markdown = extract(INSTALL.encode(), "http://x/install").markdown
    assert "MENUWORD" in markdown and "SITEFOOTERWORD" in markdown and "## 系统要求" in markdown


def test_one_document_per_page_titled_and_without_the_site_chrome(site, settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True
    items, result = scan(site)
    assert result.complete, result.note
    assert set(items) == {site.url("/"), site.url("/manual"), site.url("/install"), site.url("/pricing")}
    assert all(isinstance(item, Fetched) for item in items.values())
    titles = {key: item.title for key, item in items.items()}
    assert titles == {site.url("/"): "知库官网", site.url("/manual"): "产品手册", site.url("/install"): "安装",
                      site.url("/pricing"): "价格"}
    assert items[site.url("/")].name.endswith("/index.md")
    for item in items.values():
        text = item.data.decode()
        for word in ("MENUWORD", "SITEFOOTERWORD", "COOKIEWORD", "首页"):
            assert word not in text, (item.key, word, text)
        assert item.url == item.key
    manual = items[site.url("/manual")].data.decode()
    assert "## 快速开始" in manual and "QUICKSTARTWORD" in manual and "## 常见问题" in manual


def test_a_page_fetched_alone_keeps_its_text_and_the_semantic_cuts(site, settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True
    site.pages["/alone"] = page("""<html><head><title>单页 - 知库官网</title></head><body>
<nav><a href="/">首页 NAVWORD</a></nav><header><p>知库 HEADERWORD</p></header><main><h1>单页</h1>
<p>这一页单独抓取，没有别的页面可以比较，语义标签标出的导航和页脚仍然去掉，正文完整保留。</p></main>
<footer><p>版权所有 FOOTWORD</p></footer></body></html>""")
    items, _result = scan(site, url=site.url("/alone"), max_depth=0)
    text = items[site.url("/alone")].data.decode()
    assert "正文完整保留" in text and items[site.url("/alone")].title == "单页 - 知库官网"   # no site to compare with
    assert not any(word in text for word in ("NAVWORD", "HEADERWORD", "FOOTWORD"))


def test_index_html_as_the_start_url_is_the_directory(site, settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True
    items, _result = scan(site, url=site.url("/index.html"), max_depth=0)
    assert list(items) == [site.url("/")]


def test_the_title_affix_is_the_part_most_titles_share():
    titles = ["产品手册 - 知库官网", "安装 - 知库官网", "知库官网", "价格｜知库官网"]
    assert title_affix(titles) == ("", "知库官网")
    assert [trimmed(t, "", "知库官网") for t in titles] == ["产品手册", "安装", "知库官网", "价格"]
    assert title_affix(["知库 | 安装", "知库 | 价格", "关于"]) == ("知库", "")
    assert title_affix(["Wi-Fi setup", "Single sign-on"]) == ("", "")      # an unspaced hyphen is no separator


def _command(*args) -> dict:
    out = StringIO()
    call_command(*args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


@pytest.mark.django_db
def test_through_source_run_documents_sections_and_citations(site, kb, alice, settings,
                                                              django_capture_on_commit_callbacks):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True
    added = _command("source_add", "--kb", kb.name, "--owner", "alice", "--kind", "web", "--url", site.url("/"),
                     "--setting", "delay_s=0")
    with django_capture_on_commit_callbacks(execute=True):
        run = _command("source_run", str(added["id"]))
    assert (run["status"], run["added"], run["failed"]) == ("succeeded", 4, 0), run
    docs = {d.source_url: d for d in Document.objects.filter(kb=kb, status=DocumentStatus.READY)}
    assert {url: d.title for url, d in docs.items()} == {
        site.url("/"): "知库官网", site.url("/manual"): "产品手册", site.url("/install"): "安装",
        site.url("/pricing"): "价格"}
    chunks = list(Chunk.objects.filter(document__kb=kb))
    assert chunks and not any(w in c.content for c in chunks for w in ("MENUWORD", "SITEFOOTERWORD", "首页"))
    quick = [c for c in chunks if "QUICKSTARTWORD" in c.content]
    assert quick and all("快速开始" in c.section_path for c in quick), [c.section_path for c in quick]
    assert any("系统要求" in c.section_path for c in chunks if "REQUIREWORD" in c.content)

    result = searched(user=alice, query="专业版的年费是多少", kbs=[kb])
    context = context_build(result.candidates)
    citations = citations_map("专业版年费一万二千元 [1]。", context.sources)
    assert citations and citations[0]["document"]["source_url"] == site.url("/pricing")
    with django_capture_on_commit_callbacks(execute=True):
        again = _command("source_run", str(added["id"]))
    assert (again["added"], again["updated"], again["removed"], again["unchanged"]) == (0, 0, 0, 4), again


def test_a_changed_page_is_compared_with_the_unchanged_pages_stored_readings(site, settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True
    for number, path in enumerate(("/", "/manual", "/install", "/pricing", "/pricing-copy")):
        site.pages[path].etag = f'"v1-{number}"'
    first, _result = scan(site)
    known = remember({}, first)
    assert all(state.state.get("blocks") and state.state.get("digest") for state in known.values())
    site.pages["/install"] = page(INSTALL.replace("REQUIREWORD", "REQUIREWORD2"), etag='"v2"')
    second, result = scan(site, known)
    assert result.complete, result.note
    assert kinds(second) == {"/": "unchanged", "/manual": "unchanged", "/install": "fetched", "/pricing": "unchanged"}
    text = second[site.url("/install")].data.decode()          # only it was read; the others answered 304
    assert "REQUIREWORD2" in text and "MENUWORD" not in text and "SITEFOOTERWORD" not in text
    assert second[site.url("/install")].title == "安装"


def test_a_cookie_banner_is_cut_but_a_wrapper_whose_class_names_cookies_is_not():
    html = (f'<html><head><title>条款</title></head><body class="cookie-ok"><div id="wrap" class="has-cookie-bar">'
            f'<h1>服务条款</h1><p>{"本条款约定知库服务的范围、费用和双方的权利义务，订购即表示同意。" * 3}</p>'
            f'<h2>费用</h2><p>{"费用按年支付，到期前三十日提醒续费，逾期未付则暂停服务。" * 3}</p></div>'
            '<div class="cookie-banner"><p>COOKIEBAR 我们使用 Cookie 改善体验，点击接受即表示同意。</p></div></body></html>')
    markdown = extract(html.encode(), "http://x/terms").markdown
    assert "# 服务条款" in markdown and "## 费用" in markdown and "逾期未付" in markdown
    assert "COOKIEBAR" not in markdown
