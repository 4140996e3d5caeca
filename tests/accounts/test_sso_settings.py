"""Single sign-on settings and the password sign-in they leave: SSO-only mode, the break-glass account, production's rules."""
from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

OIDC = {"ZHIKU_OIDC_CLIENT_ID": "zhiku", "ZHIKU_OIDC_CLIENT_SECRET": "s", "ZHIKU_OIDC_ISSUER": "https://id.example.com",
        "ZHIKU_OIDC_AUTHORIZATION_ENDPOINT": "https://id.example.com/auth", "ZHIKU_OIDC_TOKEN_ENDPOINT": "https://id.example.com/token",
        "ZHIKU_OIDC_USERINFO_ENDPOINT": "https://id.example.com/me", "ZHIKU_OIDC_JWKS_URI": "https://id.example.com/jwks"}


def test_without_oidc_the_page_has_no_button_and_the_flow_answers_404(sso_env, client, db):
    sso_env()
    page = client.get("/accounts/login/")
    assert b'id="sso-start"' not in page.content and b'id="password-form"' in page.content
    assert client.get("/accounts/sso/start/").status_code == 404
    assert client.get("/accounts/sso/callback/?code=x&state=y").status_code == 404


def test_the_start_sends_the_browser_to_the_provider_with_pkce(sso_env, client, db):
    sso_env(**OIDC, ZHIKU_OIDC_REDIRECT_URL="https://kb.example.com/accounts/sso/callback/")
    response = client.get("/accounts/sso/start/?next=/kb/1/")
    assert response.status_code == 302
    location = response["Location"]
    assert location.startswith("https://id.example.com/auth?")
    for part in ("response_type=code", "code_challenge_method=S256", "code_challenge=", "state=", "nonce=",
                 "redirect_uri=https%3A%2F%2Fkb.example.com%2Faccounts%2Fsso%2Fcallback%2F"):
        assert part in location


def test_a_callback_with_a_state_this_session_never_sent_ends_on_the_sign_in_page(sso_env, client, db):
    sso_env(**OIDC)
    client.get("/accounts/sso/start/")
    response = client.get("/accounts/sso/callback/?code=abc&state=forged")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/?sso=failed"
    page = client.get(response["Location"])
    assert b'id="sso-failed"' in page.content and "单点登录未完成" in page.content.decode()


def test_sso_only_turns_passwords_off_but_for_the_break_glass_account(sso_env, make_user, api_client):
    make_user("alice")
    make_user("root", superuser=True)
    sso_env(**OIDC, ZHIKU_SSO_ONLY="1", ZHIKU_SSO_BREAK_GLASS="root")
    page = Client().get("/accounts/login/").content.decode()
    assert 'id="sso-start"' in page and "<details" in page  # the form folded away under "Administrator sign-in"
    refused = Client().post("/accounts/login/", {"username": "alice", "password": "pw-alice"})
    assert refused.status_code == 200 and refused.context["form"].errors
    assert Client().post("/accounts/login/", {"username": "root", "password": "pw-root"}).status_code == 302
    # The API's token endpoint and the admin's sign-in take the same rule.
    token = api_client.post("/api/auth/token/", {"username": "alice", "password": "pw-alice"}, format="json")
    assert token.status_code == 400 and token.json()["error"]["code"] == "invalid_credentials"
    assert api_client.post("/api/auth/token/", {"username": "root", "password": "pw-root"}, format="json").status_code == 200
    admin = Client().post("/admin/login/", {"username": "root", "password": "pw-root"})
    assert admin.status_code == 302


def test_turning_sso_only_on_ends_password_sessions_but_for_none_before(sso_env, make_user):
    alice = make_user("alice")
    sso_env()
    client = Client()
    assert client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"}).status_code == 302
    assert client.get("/").wsgi_request.user == alice
    sso_env(**OIDC, ZHIKU_SSO_ONLY="1")
    assert not client.get("/").wsgi_request.user.is_authenticated


def test_sso_only_needs_a_way_to_sign_in(sso_env):
    with pytest.raises(ImproperlyConfigured, match="nobody could sign in"):
        sso_env(ZHIKU_SSO_ONLY="1")


def test_production_refuses_an_oidc_redirect_that_is_not_https(sso_env):
    with pytest.raises(ImproperlyConfigured, match="ZHIKU_OIDC_REDIRECT_URL must be an https"):
        sso_env(ZHIKU_ENV="production", **OIDC, ZHIKU_OIDC_REDIRECT_URL="http://kb.example.com/accounts/sso/callback/")
    with pytest.raises(ImproperlyConfigured, match="ZHIKU_OIDC_REDIRECT_URL must be an https"):
        sso_env(ZHIKU_ENV="production", **OIDC, ZHIKU_OIDC_REDIRECT_URL="")
    module = sso_env(ZHIKU_ENV="production", **OIDC, ZHIKU_OIDC_REDIRECT_URL="https://kb.example.com/accounts/sso/callback/")
    assert module.OIDC_USE_PKCE and module.ZHIKU_OIDC_ENABLED


def test_oidc_needs_its_endpoints(sso_env):
    with pytest.raises(ImproperlyConfigured, match="ZHIKU_OIDC_TOKEN_ENDPOINT"):
        sso_env(**{k: v for k, v in OIDC.items() if k != "ZHIKU_OIDC_TOKEN_ENDPOINT"})


def test_the_button_speaks_the_users_language_and_can_be_renamed(sso_env, client, db):
    sso_env(**OIDC)
    assert "使用企业账号登录" in client.get("/accounts/login/").content.decode()
    english = client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Sign in with SSO" in english and "Or sign in with a username and password:" in english
    sso_env(ZHIKU_OIDC_BUTTON_LABEL="使用飞书登录")
    assert "使用飞书登录" in client.get("/accounts/login/").content.decode()


def test_the_admin_lists_sso_links_read_only(sso_env, make_user, client):
    from accounts.models import SsoIdentity

    root = make_user("root", superuser=True)
    SsoIdentity.objects.create(user=make_user("chen.liu"), source="oidc", issuer="https://id.example.com", subject="u-1")
    client.force_login(root)
    page = client.get("/admin/accounts/ssoidentity/")
    assert page.status_code == 200 and "u-1" in page.content.decode()
    assert client.get("/admin/accounts/ssoidentity/add/").status_code == 403
