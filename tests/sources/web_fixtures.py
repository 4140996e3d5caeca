"""The small site the web connector's tests crawl, and a helper that runs one scan like the runner does."""
from __future__ import annotations

import io

from sources.kinds.base import Failed, Fetched, Known, Limits, ScanResult, Unchanged, connector_for
from tests.docgen import raw_pdf, text_page
from tests.sources.web_server import Resource, Site, http_date, page

NAV = "站点导航菜单NAVWORD"
FOOTER = "版权所有FOOTERWORD 京ICP备00000000号"


def layout(title: str, body: str, links: str = "") -> str:
    """A page as sites write them: navigation, a header, the article, a footer."""
    return f"""<!DOCTYPE html><html lang="zh"><head><meta charset="utf-8"><title>{title}</title></head><body>
<header><div class="logo">星河科技 HEADERWORD</div><nav><ul><li><a href="/">首页 {NAV}</a></li>
<li><a href="/guide/install">安装</a></li><li><a href="/zh/policy">制度</a></li></ul></nav></header>
<main><article>{body}</article>{links}</main>
<footer><p>{FOOTER}</p><p><a href="/about">关于我们</a> <a href="mailto:a@example.com">联系</a></p></footer>
</body></html>"""


INSTALL_V1 = """<h1>Installing the server</h1>
<p>Download the release archive and unpack it into the installation directory. The installer checks the
operating system and the database version before it copies any file, and it refuses to run as root.</p>
<h2>Requirements</h2>
<p>The server needs PostgreSQL 16 with the vector extension and Redis 7 for the job queue. ALPHAWORD marks
the first version of this page, which the second scan must no longer find.</p>"""

INSTALL_V2 = """<h1>Installing the server</h1>
<p>Download the release archive and unpack it into the installation directory. The installer checks the
operating system and the database version before it copies any file, and it refuses to run as root.</p>
<h2>Requirements</h2>
<p>The server needs PostgreSQL 17 with the vector extension and Redis 8 for the job queue. BRAVOWORD marks
the second version of this page. See also <a href="/guide/new">the new upgrade notes</a>.</p>"""

POLICY_ZH = """<h1>差旅费管理办法</h1>
<p>第一条 为规范公司员工因公出差的审批和费用报销，合理控制差旅成本，根据国家有关规定，结合公司实际情况，制定本办法。</p>
<h2>住宿标准</h2>
<p>住宿费按照出差城市类别和员工职级分别核定，超出标准的部分由员工个人承担。具体标准见下表。</p>
<table><thead><tr><th>城市类别</th><th>职级</th><th>住宿上限（元/晚）</th></tr></thead>
<tbody><tr><td>一类城市</td><td>经理</td><td>700</td></tr><tr><td>二类城市</td><td>专员</td><td>400</td></tr></tbody></table>
<p>第六条 乘坐火车的，总监及以上职级可乘坐一等座，其他人员乘坐二等座；乘坐飞机的，一律乘坐经济舱。</p>"""

LONG = ("<p>This paragraph is long enough for the extractor to treat the article as the page's main content, "
        "and it says what the page is about in several plain sentences so that nothing is mistaken for a menu.</p>")


def docx_bytes(text: str) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Release notes", level=1)
    document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def build_site(site: Site) -> None:
    """Version 1 of the site."""
    home_links = """<ul class="related"><li><a href="/guide/install#top">Install</a></li>
<li><a href="/guide/config.html?utm_source=home">Config</a></li><li><a href="/zh/policy">差旅</a></li>
<li><a href="/private/secret">secret</a></li><li><a href="/files/report.pdf">PDF report</a></li>
<li><a href="/files/notes.docx">Notes</a></li><li><a href="/broken">broken</a></li><li><a href="/old">old</a></li>
<li><a href="http://other.invalid/elsewhere">elsewhere</a></li><li><a href="/logo.png">logo</a></li></ul>"""
    site.pages.update({
        "/robots.txt": Resource(b"User-agent: *\nDisallow: /private/\n", "text/plain"),
        "/": page(layout("星河科技 文档", f"<h1>Documentation home</h1>{LONG}", home_links), etag='"home-1"'),
        "/guide/install": page(layout("Installing the server", INSTALL_V1), etag='"install-1"'),
        "/guide/config.html": page(layout("Configuration", f"<h1>Configuration</h1>{LONG}"
                                          '<p>Settings are read from the environment; see <a href="/deep">the '
                                          'reference</a>.</p>'), last_modified=http_date(1_700_000_000)),
        "/deep": page(layout("Reference", f"<h1>Reference</h1>{LONG}<p>DEEPWORD every variable.</p>")),
        "/zh/policy": page(layout("差旅费管理办法", POLICY_ZH), etag='"policy-1"'),
        "/private/secret": page(layout("Secret", "<h1>SECRETWORD</h1>")),
        "/files/report.pdf": Resource(raw_pdf([text_page("Quarterly report PDFWORD\nRevenue grew.")]),
                                      "application/pdf", etag='"pdf-1"'),
        "/files/notes.docx": Resource(docx_bytes("DOCXWORD the release notes."),
                                      "application/octet-stream"),
        "/broken": Resource(b"oops", "text/plain", status=500),
        "/old": page(layout("Old page", f"<h1>Old page</h1>{LONG}<p>OLDWORD soon removed.</p>"), etag='"old-1"'),
        "/logo.png": Resource(b"\x89PNG\r\n\x1a\n", "image/png"),
    })


def scan(site: Site, known: dict[str, Known] | None = None, *, limits: Limits | None = None,
         credentials: dict | None = None, cancelled=lambda: False, **settings):
    """Run one scan of ``site``: (items by key, result). Settings default to delay 0."""
    settings = {"url": site.url("/"), "delay_s": 0, **settings}
    cls = connector_for("web")
    connector = cls(cls.clean_settings(settings), credentials or {}, limits=limits or Limits(timeout_s=5))
    result = ScanResult()
    try:
        items = list(connector.scan(known or {}, result, cancelled))
    finally:
        connector.close()
    by_key = {item.key: item for item in items}
    assert len(by_key) == len(items), "a key was yielded twice"
    return by_key, result


def remember(previous: dict[str, Known], items: dict) -> dict[str, Known]:
    """What the runner keeps after a scan: Fetched items replace, Unchanged keep (state updated), Failed keep."""
    kept = {}
    for key, item in items.items():
        if isinstance(item, Fetched):
            kept[key] = Known(item.revision, dict(item.state))
        elif isinstance(item, Unchanged):
            old = previous[key]
            kept[key] = Known(old.revision, dict(item.state) if item.state is not None else dict(old.state))
        elif isinstance(item, Failed) and key in previous:
            kept[key] = previous[key]
    return kept


def kinds(items: dict) -> dict[str, str]:
    """key path → "fetched" / "unchanged" / "failed"."""
    from urllib.parse import urlsplit

    return {urlsplit(key).path + (f"?{urlsplit(key).query}" if urlsplit(key).query else ""):
            type(item).__name__.lower() for key, item in items.items()}
