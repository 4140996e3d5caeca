"""The error pages (400, 403, 404, 500, a refused CSRF check) in the reader's language with a way back, JSON under
/api/, and API messages with their role and status words translated (config/error_pages.py, templates/errors/)."""
from __future__ import annotations

import re

import pytest
from django.test import Client

from knowledge.models import Document
from knowledge.services.kbs import membership_set

pytestmark = pytest.mark.django_db

EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


def page(response, status: int) -> str:
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    # The console's look and a way back.
    assert 'class="error-page card"' in html and "/static/zhiku/console.css" in html
    assert 'id="go-home" href="/"' in html or 'href="/" id="go-home"' in html
    assert 'id="go-back"' in html and "/static/zhiku/error_page.js" in html
    return html


def no_chinese(html: str) -> bool:
    return not any("\u4e00" <= ch <= "\u9fff" for ch in html.replace("知库", "").replace(">简体中文<", ""))


@pytest.fixture
def bob_client(bob):
    client = Client()
    client.force_login(bob)
    return client


def test_an_editor_opening_the_settings_gets_a_403_page_in_their_language(bob_client, kb, bob):
    membership_set(kb=kb, user=bob, role="editor")
    html = page(bob_client.get(f"/kbs/{kb.pk}/settings/", **ZH), 403)
    assert '<html lang="zh-CN">' in html and "您无权打开此页面" in html and "返回首页" in html
    assert "此操作需要该知识库的所有者角色。" in html and "owner" not in html
    assert re.search(r'id="username"[^>]*>bob<', html)  # the console's header, with the user menu
    html = page(bob_client.get(f"/kbs/{kb.pk}/settings/", **EN), 403)
    assert '<html lang="en">' in html and "You cannot open this page" in html and "Back to the home page" in html
    assert "This action needs the owner role on the knowledge base." in html and no_chinese(html)


def test_a_viewer_opening_hit_testing_gets_a_403_page(bob_client, kb, bob):
    membership_set(kb=kb, user=bob, role="viewer")
    html = page(bob_client.get(f"/kbs/{kb.pk}/hit-test/"), 403)  # no Accept-Language: Chinese
    assert "此操作需要该知识库的编辑者角色。" in html and "editor" not in html
    html = page(bob_client.get(f"/kbs/{kb.pk}/hit-test/", **EN), 403)
    assert "This action needs the editor role on the knowledge base." in html


def test_an_unreadable_kb_and_an_unknown_address_get_a_404_page(bob_client, kb, ingest):
    ingest(kb, {"a.md": "# 标题\n\n正文。\n"})
    document = Document.objects.get()
    for url in (f"/kbs/{kb.pk}/", f"/kbs/{kb.pk}/documents/{document.pk}/", "/no-such-page/"):
        html = page(bob_client.get(url), 404)
        assert "页面不存在" in html and "此页面不存在，或者您无权访问。" in html and kb.name not in html
        assert "Not Found" not in html and "requested resource" not in html
        html = page(bob_client.get(url, **EN), 404)
        assert "Page not found" in html and "This page does not exist, or you cannot access it." in html
        assert no_chinese(html)
    # Anonymous callers get it too (the header offers to sign in).
    assert "登录" in page(Client().get("/no-such-page/"), 404)


def test_api_paths_keep_their_json_errors(client_for, bob, kb):
    response = client_for(bob).get("/api/no-such-endpoint/", **EN)
    assert response.status_code == 404 and response.json() == {"error": {"code": "not_found", "message": "Not found."}}
    response = client_for(bob).get(f"/api/kbs/{kb.pk}/")
    assert response.status_code == 404 and response.json()["error"]["code"] == "kb_not_found"


def test_the_403_and_400_handlers_answer_json_under_api(rf):
    import json

    from config.error_pages import bad_request, permission_denied

    response = permission_denied(rf.get("/api/kbs/1/"), Exception("x"))
    assert response.status_code == 403 and json.loads(response.content)["error"]["code"] == "permission_denied"
    response = bad_request(rf.get("/api/kbs/"), Exception("x"))
    assert response.status_code == 400 and json.loads(response.content)["error"]["code"] == "bad_request"


def test_a_bad_host_gets_the_400_page_in_the_readers_language():
    client = Client(HTTP_HOST="evil.example")
    html = page(client.get("/", **ZH), 400)
    assert "请求有误" in html and "错误 400" in html and '<html lang="zh-CN">' in html
    html = page(client.get("/", **EN), 400)
    assert "Bad request" in html and no_chinese(html)


def test_a_view_that_raises_gets_the_500_page_and_json_under_api(settings, bob):
    settings.ROOT_URLCONF = "tests.config.error_urls"
    settings.DEBUG = False
    client = Client(raise_request_exception=False)
    client.force_login(bob)
    html = page(client.get("/boom/"), 500)
    assert "服务器出错了" in html and "错误 500" in html and "RuntimeError" not in html and "Traceback" not in html
    html = page(client.get("/boom/", **EN), 500)
    assert "Something went wrong on the server" in html and no_chinese(html)
    # Rendered without the request: no user menu, no CSRF token, no language switch.
    assert "bob" not in html and "csrfmiddlewaretoken" not in html
    response = client.get("/api/boom/", **EN)
    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    assert response.json() == {"error": {"code": "internal_error", "message": "The server met an error; try again later."}}
    assert client.get("/api/boom/").json()["error"]["message"] == "服务器出错了，请稍后重试。"


def test_a_form_without_its_csrf_token_gets_the_csrf_page(bob):
    client = Client(enforce_csrf_checks=True)
    html = page(client.post("/accounts/login/", {"username": "bob", "password": "pw-bob"}), 403)
    assert "表单未被接受" in html and "请返回上一页，刷新页面后再提交一次。" in html
    assert "CSRF verification failed" not in html
    html = page(client.post("/i18n/setlang/", {"language": "en"}, **EN), 403)
    assert "The form was not accepted" in html and "Go back, reload the page and send it again." in html
    assert no_chinese(html)


def test_api_csrf_refusals_are_in_one_language(bob):
    client = Client(enforce_csrf_checks=True)
    client.force_login(bob)
    response = client.post("/api/kbs/", {"name": "x"}, content_type="application/json")
    assert response.status_code == 403
    assert response.json()["error"] == {"code": "permission_denied", "message": "CSRF 校验失败：未设置 CSRF Cookie"}
    client.get("/")  # the console page sets the CSRF cookie
    response = client.post("/api/kbs/", {"name": "x"}, content_type="application/json", **EN)
    assert response.json()["error"]["message"] == "CSRF failed: the CSRF token is missing"


def test_role_and_status_words_in_api_messages_are_translated(client_for, bob, kb, ingest):
    membership_set(kb=kb, user=bob, role="viewer")
    url = f"/api/kbs/{kb.pk}/documents/"
    response = client_for(bob).post(url, {}, format="multipart")
    assert response.status_code == 403
    assert response.json()["error"] == {"code": "role_required", "message": "此操作需要该知识库的编辑者角色。"}
    response = client_for(bob).post(url, {}, format="multipart", **EN)
    assert response.json()["error"]["message"] == "This action needs the editor role on the knowledge base."
    response = client_for(bob).patch(f"/api/kbs/{kb.pk}/", {"top_k": 3}, format="json")
    assert response.json()["error"]["message"] == "此操作需要该知识库的所有者角色。"
    # A document's status in words: retrying a ready document.
    (document,) = ingest(kb, {"a.md": "# 标题\n\n正文。\n"})
    membership_set(kb=kb, user=bob, role="editor")
    response = client_for(bob).post(f"/api/kbs/{kb.pk}/documents/{document.pk}/retry/")
    assert response.status_code == 409
    assert response.json()["error"]["message"] == "只有失败或停滞的文档可以重试；该文档的状态是已就绪。"
    response = client_for(bob).post(f"/api/kbs/{kb.pk}/documents/{document.pk}/retry/", **EN)
    assert response.json()["error"]["message"] == "Only failed or stalled documents can be retried; this one is ready."


def test_a_500_page_that_cannot_render_still_answers(settings, monkeypatch):
    from django.views import defaults

    def broken(request, template_name="500.html"):
        raise ValueError("Missing staticfiles manifest entry for 'zhiku/console.css'")

    monkeypatch.setattr(defaults, "server_error", broken)
    settings.ROOT_URLCONF = "tests.config.error_urls"
    response = Client(raise_request_exception=False).get("/boom/")
    assert response.status_code == 500 and response.content == b"<h1>Server Error (500)</h1>"
