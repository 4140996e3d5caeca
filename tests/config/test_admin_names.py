"""The admin speaks the reader's language in every section (issue 47 item 5): django-axes' and django-oauth-toolkit's
sections and models (config/third_party.py) and the people's preferences, in Chinese and in English."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def index(client, language: str) -> str:
    return client.get("/admin/", HTTP_ACCEPT_LANGUAGE=language).content.decode()


def test_third_party_sections_and_models_are_named_in_the_reader_s_language(client, make_user):
    client.force_login(make_user("root", superuser=True))
    chinese = index(client, "zh-CN")
    for words in ("登录防护", "登录尝试", "登录记录", "登录失败", "MCP 客户端的 OAuth 授权", "OAuth 客户端", "访问令牌", "刷新令牌",
                  "授权码", "ID 令牌", "偏好设置", "认证和授权"):
        assert words in chinese, words
    for english in ("Axes", "Django OAuth Toolkit", "Access attempts", "Access tokens", "Applications", "Preferences"):
        assert english not in chinese, english
    english = index(client, "en")
    for words in ("Sign-in protection", "Access attempts", "MCP clients&#x27; OAuth sign-in", "OAuth clients",
                  "Access tokens", "Refresh tokens", "Authorization codes", "ID tokens", "Preferences"):
        assert words in english, words
    assert "Django OAuth Toolkit" not in english


def test_a_third_party_change_list_is_titled_in_the_reader_s_language(client, make_user):
    client.force_login(make_user("root", superuser=True))
    page = client.get("/admin/oauth2_provider/accesstoken/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "选择 访问令牌 来修改" in page and "MCP 客户端的 OAuth 授权" in page
    page = client.get("/admin/axes/accessattempt/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "登录防护" in page and "登录尝试" in page
