"""The assistants' console pages render with the Django client, in Chinese by default and in English on request;
another user's assistant is a 404; the KB page shows its retrieval keys section to owners only."""
from __future__ import annotations

import re

import pytest
from django.test import Client

from assistants.services import assistant_update
from knowledge.models import Membership, Role

pytestmark = pytest.mark.django_db


def page(user, path: str, language: str = "zh-CN"):
    client = Client()
    client.force_login(user)
    return client.get(path, HTTP_ACCEPT_LANGUAGE=language)


def scripts_are_files(html: str) -> None:
    """No inline script (the CSP allows none): every <script> has a src."""
    assert all("src=" in tag for tag in re.findall(r"<script[^>]*>", html))


def test_the_list_page_in_both_languages(alice, assistant):
    html = page(alice, "/assistants/").content.decode()
    assert "我的应用" in html and "新建应用" in html and assistant.name in html and "产品文档" in html
    assert 'id="nav-assistants"' in html and ">应用</a>" in html
    english = page(alice, "/assistants/", "en").content.decode()
    assert "My assistants" in english and "New assistant" in english and "我的应用" not in english
    assert ">Assistants</a>" in english


def test_the_form_offers_the_kbs_the_user_can_read_in_order(alice, bob, assistant, docs_kb, make_kb):
    shared = make_kb(bob, "Bob 共享")
    Membership.objects.create(kb=shared, user=alice, role=Role.VIEWER)
    make_kb(bob, "Bob 私有")
    html = page(alice, f"/assistants/{assistant.pk}/edit/").content.decode()
    boxes = re.findall(r'<input type="checkbox" name="kb" value="(\d+)"( checked)?', html)
    assert boxes == [(str(docs_kb.pk), " checked"), (str(shared.pk), "")]  # the assistant's first, then the rest
    assert "系统提示词" in html and "推荐问题" in html and "允许嵌入聊天的网站" in html and "Bob 私有" not in html
    scripts_are_files(html)
    new = page(alice, "/assistants/new/", "en").content.decode()
    assert "New assistant" in new and "Suggested questions" in new and "Create the assistant" in new
    assert 'name="share_access"' in new and 'value="off" selected' in new


def test_the_assistant_page_shows_keys_usage_share_embed_and_try(alice, assistant):
    assistant_update(assistant=assistant, user=alice, share_access="public", opening_message="你好，我是产品助手。",
                     suggested_questions=["专业版多少钱？"], allowed_origins=["https://intranet.example.com"])
    assistant.refresh_from_db()
    html = page(alice, f"/assistants/{assistant.pk}/").content.decode()
    for words in ("试用", "API 密钥", "用量", "分享链接与嵌入", "你好，我是产品助手。", "专业版多少钱？", "创建密钥",
                  "https://intranet.example.com"):
        assert words in html, words
    assert f"http://testserver/s/{assistant.share_token}/" in html
    assert f"&lt;script src=&quot;http://testserver/embed/{assistant.pk}.js&quot;" in html or \
        f'&lt;script src="http://testserver/embed/{assistant.pk}.js"' in html
    assert f'data-keys-url="/api/assistants/{assistant.pk}/keys/"' in html
    scripts_are_files(html)
    english = page(alice, f"/assistants/{assistant.pk}/", "en").content.decode()
    assert "Try it" in english and "API keys" in english and "Usage" in english and "试用" not in english


def test_another_users_assistant_pages_are_404(bob, assistant):
    for path in (f"/assistants/{assistant.pk}/", f"/assistants/{assistant.pk}/edit/"):
        assert page(bob, path).status_code == 404
    assert assistant.name not in page(bob, "/assistants/").content.decode()


def test_signed_out_visitors_are_sent_to_sign_in(client, assistant):
    response = client.get("/assistants/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_the_kb_page_shows_retrieval_keys_to_owners_only(alice, bob, docs_kb):
    html = page(alice, f"/kbs/{docs_kb.pk}/").content.decode()
    assert "检索密钥" in html and f'data-keys-url="/api/kbs/{docs_kb.pk}/keys/"' in html and "assistants/keys.js" in html
    assert "Retrieval keys" in page(alice, f"/kbs/{docs_kb.pk}/", "en").content.decode()
    Membership.objects.create(kb=docs_kb, user=bob, role=Role.EDITOR)
    other = page(bob, f"/kbs/{docs_kb.pk}/").content.decode()
    assert "检索密钥" not in other and "data-keys-url" not in other


def test_the_javascript_catalogue_has_the_pages_words_in_chinese(client):
    catalogue = client.get("/jsi18n/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "\\u540a\\u9500" in catalogue or "吊销" in catalogue  # "Revoke"


def test_a_kb_the_owner_lost_is_marked_on_the_assistant_page(alice, bob, docs_kb, make_kb):
    from assistants.services import assistant_create

    shared = make_kb(bob, "Bob 共享")
    membership = Membership.objects.create(kb=shared, user=alice, role=Role.VIEWER)
    made = assistant_create(owner=alice, name="两库", kb_ids=[shared.pk, docs_kb.pk])
    assert "Bob 共享" in page(alice, f"/assistants/{made.pk}/").content.decode()
    membership.delete()
    html = page(alice, f"/assistants/{made.pk}/").content.decode()
    assert "Bob 共享" not in html and "已失去访问的知识库" in html and "产品文档" in html
