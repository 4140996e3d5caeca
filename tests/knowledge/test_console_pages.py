"""The console pages with Django's test client: who may open which page, and what each role is shown."""
from __future__ import annotations

import pytest

from knowledge.models import Document, KnowledgeBase

pytestmark = pytest.mark.django_db

DOCS = {"退货政策.md": "# 退货政策\n\n## 运费\n\n购买商品七天内可以无理由退货，退货运费由买家承担。\n"}


@pytest.fixture
def carol(make_user):
    return make_user("carol")


def pages(kb, document=None):
    urls = [f"/kbs/{kb.pk}/", f"/kbs/{kb.pk}/settings/"]
    if document is not None:
        urls.append(f"/kbs/{kb.pk}/documents/{document.pk}/")
    return urls


def test_anonymous_is_sent_to_sign_in(client, kb, ingest):
    ingest(kb, DOCS)
    for url in pages(kb, Document.objects.get()):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=")


def test_a_stranger_gets_404_for_another_users_kb(client, kb, ingest, carol):
    ingest(kb, DOCS)
    client.force_login(carol)
    for url in pages(kb, Document.objects.get()):
        assert client.get(url).status_code == 404
    assert "Alice KB" not in client.get("/").content.decode()


def test_unknown_kb_and_document_are_404(client, kb, alice):
    client.force_login(alice)
    assert client.get("/kbs/999999/").status_code == 404
    assert client.get(f"/kbs/{kb.pk}/documents/999999/").status_code == 404


def test_a_document_of_another_kb_is_404(client, kb, make_kb, alice, ingest):
    other = make_kb(alice, "Other")
    ingest(other, DOCS)
    client.force_login(alice)
    assert client.get(f"/kbs/{kb.pk}/documents/{Document.objects.get().pk}/").status_code == 404


def test_header_links_and_sign_out(client, alice, make_user):
    client.force_login(alice)
    html = client.get("/").content.decode()
    assert 'href="/chat/"' in html and 'action="/accounts/logout/"' in html and "alice" in html
    assert 'href="/admin/"' not in html  # not staff
    client.force_login(make_user("root", superuser=True))
    assert 'href="/admin/"' in client.get("/").content.decode()
    response = client.post("/accounts/logout/")
    assert response.status_code == 302
    assert "_auth_user_id" not in client.session


def test_kb_list_shows_counts_role_and_creates_a_kb(client, alice, bob, kb, ingest):
    from knowledge.services.kbs import membership_set

    ingest(kb, DOCS)
    membership_set(kb=kb, user=bob, role="viewer")
    client.force_login(bob)
    html = client.get("/").content.decode()
    assert "Alice KB" in html and "查看者" in html and f'href="/kbs/{kb.pk}/"' in html
    assert f"/kbs/{kb.pk}/settings/" not in html and f"/kbs/{kb.pk}/hit-test/" not in html
    row = html[html.index(f'data-kb-id="{kb.pk}"'):]
    chunks = Document.objects.get().chunks.count()
    assert '<td class="num">1</td>' in row and f'<td class="num">{chunks}</td>' in row

    response = client.post("/", {"name": "Bob 的知识库", "description": "测试"})
    created = KnowledgeBase.objects.get(name="Bob 的知识库")
    assert created.owner == bob and response.status_code == 302 and response["Location"] == f"/kbs/{created.pk}/"
    response = client.post("/", {"name": "Bob 的知识库"})
    assert response.status_code == 200 and "您已有同名的知识库" in response.content.decode()
    assert client.post("/", {"name": "  "}).status_code == 200
    assert KnowledgeBase.objects.filter(owner=bob).count() == 1


def test_anonymous_cannot_create_a_kb(client, db):
    response = client.post("/", {"name": "x"})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert not KnowledgeBase.objects.exists()


def test_counts_hold_only_what_the_caller_may_read(client, alice, bob, kb, ingest):
    from django.contrib.auth.models import Group

    from knowledge.services.kbs import membership_set

    ingest(kb, DOCS)
    ingest(kb, {"secret.md": "# 机密\n\n只有财务部可以看。\n"})
    Document.objects.get(source_name="secret.md").restricted_to_groups.add(Group.objects.create(name="财务部"))
    membership_set(kb=kb, user=bob, role="viewer")
    client.force_login(bob)
    html = client.get("/").content.decode()
    row = html[html.index(f'data-kb-id="{kb.pk}"'):]
    assert '<td class="num">1</td>' in row  # one readable document of two


def test_viewer_sees_no_upload_or_edit_controls(client, alice, bob, kb, ingest):
    from knowledge.services.kbs import membership_set

    ingest(kb, DOCS)
    document = Document.objects.get()
    membership_set(kb=kb, user=bob, role="viewer")
    client.force_login(bob)
    html = client.get(f"/kbs/{kb.pk}/").content.decode()
    assert 'id="file-input"' not in html and 'data-can-edit=""' in html and "查看者" in html
    assert f"/kbs/{kb.pk}/settings/" not in html
    html = client.get(f"/kbs/{kb.pk}/documents/{document.pk}/").content.decode()
    assert "购买商品七天内可以无理由退货" in html and "运费" in html
    assert "document.js" not in html
    assert 'id="restriction-form"' not in html and 'id="chunk-add-form"' not in html
    assert client.get(f"/kbs/{kb.pk}/settings/").status_code == 403
    assert client.get(f"/kbs/{kb.pk}/hit-test/").status_code == 403


def test_editor_and_owner_see_their_controls(client, alice, bob, kb, ingest):
    from knowledge.services.kbs import membership_set

    ingest(kb, DOCS)
    document = Document.objects.get()
    membership_set(kb=kb, user=bob, role="editor")
    client.force_login(bob)
    html = client.get(f"/kbs/{kb.pk}/").content.decode()
    assert 'id="file-input"' in html and 'data-can-edit="1"' in html and f"/kbs/{kb.pk}/settings/" not in html
    html = client.get(f"/kbs/{kb.pk}/documents/{document.pk}/").content.decode()
    assert "document.js" in html and 'id="restriction-form"' in html and 'id="chunk-add-form"' in html
    assert 'id="chunk-size"' in client.get(f"/kbs/{kb.pk}/").content.decode()
    assert client.get(f"/kbs/{kb.pk}/settings/").status_code == 403
    client.force_login(alice)
    html = client.get(f"/kbs/{kb.pk}/").content.decode()
    assert f"/kbs/{kb.pk}/settings/" in html and "所有者" in html
    assert client.get(f"/kbs/{kb.pk}/settings/").status_code == 200


def test_names_and_text_are_escaped(client, alice, make_kb, ingest):
    kb = make_kb(alice, "<b>KB</b>", description="<i>desc</i>")
    ingest(kb, {"x.txt": "<script>window.__x=1</script> 正文\n"})
    client.force_login(alice)
    for url in ("/", f"/kbs/{kb.pk}/", f"/kbs/{kb.pk}/documents/{Document.objects.get().pk}/"):
        html = client.get(url).content.decode()
        assert "<b>KB</b>" not in html and "<i>desc</i>" not in html and "<script>window.__x" not in html


# --- Both languages: Chinese by default, English with Accept-Language or the language switch -------


def visible(html: str) -> str:
    """The page's text without its tags (what a reader sees, near enough)."""
    import re

    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_console_pages_in_both_languages(client, alice, kb, ingest):
    ingest(kb, DOCS)
    document = Document.objects.get()
    client.force_login(alice)
    expected = {
        "/": (["我的知识库", "我的角色", "新建知识库", "所有者", "命中测试"],
              ["My knowledge bases", "My role", "New knowledge base", "owner", "Hit testing"]),
        f"/kbs/{kb.pk}/": (["在本知识库中搜索", "上传文档", "文档", "加载中…", "上一页"],
                           ["Search this knowledge base", "Upload documents", "Documents", "Loading…", "Previous"]),
        f"/kbs/{kb.pk}/settings/": (["检索设置", "未找到门槛", "确信线", "同义词", "删除这个知识库", "查看者"],
                                    ["Retrieval settings", "Not-found gate", "Confidence line", "Synonyms", "Delete this knowledge base",
                                     "viewer"]),
        f"/kbs/{kb.pk}/documents/{document.pk}/": (["已就绪", "按原文顺序", "正文"],
                                                   ["ready", "in the original order", "body text"]),
        f"/kbs/{kb.pk}/hit-test/": (["命中测试", "两条线：未找到、不确定、已回答", "各阶段详情", "模式"],
                                    ["Hit testing", "The two lines: not found, uncertain, answered", "Stage details", "Mode"]),
        "/chat/": (["对话", "新对话", "历史对话", "发送"], ["Chat", "New chat", "Conversations", "Send"]),
    }
    for url, (chinese, english) in expected.items():
        zh = visible(client.get(url).content.decode())
        en = visible(client.get(url, HTTP_ACCEPT_LANGUAGE="en-US,en;q=0.9").content.decode())
        for word in chinese:
            assert word in zh, (url, word)
        for word in english:
            assert word in en, (url, word)
        assert not any(word in en for word in chinese if word not in ("所有者",)), url
        # The page scripts get their strings from the catalogue of the same language.
        assert 'src="/jsi18n/"' in client.get(url).content.decode()


def test_javascript_catalogue_has_the_page_strings(client):
    zh = client.get("/jsi18n/").content.decode()
    en = client.get("/jsi18n/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "\\u7f51\\u7edc\\u9519\\u8bef" in zh or "网络错误" in zh  # 网络错误: the console's network error
    assert "网络错误" not in en and "\\u7f51\\u7edc" not in en


def test_kb_create_error_in_english(client, alice, kb):
    client.force_login(alice)
    html = client.post("/", {"name": kb.name}, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "You already have a knowledge base with this name." in html


def test_the_document_tools_speak_both_languages(client, alice, kb, ingest):
    ingest(kb, DOCS)
    document = Document.objects.get()
    client.force_login(alice)
    pages = {"kb": f"/kbs/{kb.pk}/", "document": f"/kbs/{kb.pk}/documents/{document.pk}/"}
    chinese = {k: client.get(v, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode() for k, v in pages.items()}
    english = {k: client.get(v, HTTP_ACCEPT_LANGUAGE="en").content.decode() for k, v in pages.items()}
    assert "分段长度（字符）" in chinese["kb"] and "重叠（字符）" in chinese["kb"] and "清空列表" in chinese["kb"]
    assert "Chunk size (characters)" in english["kb"] and "Overlap (characters)" in english["kb"] and "Clear the list" in english["kb"]
    assert "谁可以阅读这个文档" in chinese["document"] and "添加分段" in chinese["document"]
    assert "知识库的所有成员均可阅读" in chinese["document"]
    assert "Who may read this document" in english["document"] and "Add a chunk" in english["document"]
    assert "分段" not in english["document"].split("<main>")[1].replace(document.source_name, "")
    catalogue = client.get("/jsi18n/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "\\u9884\\u89c8\\u5206\\u6bb5" in catalogue or "预览分段" in catalogue  # 预览分段, the preview button
    ocr = "正在识别扫描页（OCR）：%(done)s / %(total)s"  # a scanned document's progress, page by page
    assert ocr in catalogue or ocr.encode("unicode_escape").decode() in catalogue
