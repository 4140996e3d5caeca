"""The console's API tokens page and the API it calls: create (the key shown once), list, revoke, expiry choices
(accounts/token_pages.py, static/zhiku/tokens.js, accounts/api/tokens.py)."""
from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import ApiToken
from accounts.tokens import lifetime_choices, token_issue

pytestmark = pytest.mark.django_db

PAGE = "/account/tokens/"
TOKENS = "/api/auth/tokens/"


@pytest.fixture
def browser_client(alice):
    """A signed-in session that must send the CSRF token, as the page's script does."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    client.get(PAGE)  # sets the csrftoken cookie
    return client


def create(client, **body):
    return client.post(TOKENS, body, content_type="application/json", HTTP_X_CSRFTOKEN=client.cookies["csrftoken"].value)


def with_key(key: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {key}")


def test_the_page_lists_the_callers_tokens_in_both_languages(client, alice, bob):
    token, key = token_issue(user=alice, name="夜间导入脚本")
    token_issue(user=bob, name="bob's laptop")
    assert client.get(PAGE)["Location"].startswith("/accounts/login/?next=")
    client.force_login(alice)
    response = client.get(PAGE)
    html = response.content.decode()
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    assert "<h1>API 令牌</h1>" in html and "创建令牌" in html and "有效期" in html and "最近使用" in html
    assert 'id="tokens-link"' in html  # in the header, next to the user's name
    assert "夜间导入脚本" in html and f"<code>{token.key_prefix}…</code>" in html and "从未使用" in html
    assert key not in html and "bob&#x27;s laptop" not in html
    # The lifetimes within the site's maximum (default 365), the site's TTL (30) chosen; never is not offered.
    assert re.findall(r'<option value="(\d*)"', html) == ["7", "30", "90", "365"]
    assert '<option value="30" selected>30 天</option>' in html and "永不过期" not in html
    # No inline script: every script is a file (CSP, config/csp.py).
    assert all('src="' in tag for tag in re.findall(r"<script[^>]*>", html)) and "tokens.js" in html
    english = client.get(PAGE, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "<h1>API tokens</h1>" in english and "Create token" in english and "Never used" in english
    assert '<option value="90">90 days</option>' in english


def test_create_shows_the_key_once_and_it_works_until_revoked(browser_client, alice):
    response = create(browser_client, name="ci", expires_in_days=90)
    assert response.status_code == 201, response.content
    created = response.json()
    key = created["token"]
    row = ApiToken.objects.get(pk=created["id"])
    assert row.user == alice and row.name == "ci" and created["key_prefix"] == row.key_prefix == key[:8]
    assert abs(row.expiry - (timezone.now() + timedelta(days=90))) < timedelta(minutes=1)
    # The key works against the API, records its use, and is never shown again.
    assert with_key(key).get("/api/kbs/").status_code == 200
    row.refresh_from_db()
    assert row.last_used is not None
    html = browser_client.get(PAGE).content.decode()
    assert key not in html and f"<code>{row.key_prefix}…</code>" in html and "从未使用" not in html
    listed = browser_client.get(TOKENS).json()["results"]
    assert [t["name"] for t in listed] == ["ci"] and key not in str(listed)
    # Revoked: refused at once.
    response = browser_client.delete(f"{TOKENS}{row.pk}/", HTTP_X_CSRFTOKEN=browser_client.cookies["csrftoken"].value)
    assert response.status_code == 204
    assert with_key(key).get("/api/kbs/").status_code == 401


def test_revoke_all_stops_every_token(browser_client, alice):
    keys = [create(browser_client, name=f"t{i}", expires_in_days=7).json()["token"] for i in range(3)]
    response = browser_client.delete(TOKENS, HTTP_X_CSRFTOKEN=browser_client.cookies["csrftoken"].value)
    assert response.json() == {"revoked": 3}
    assert all(with_key(key).get("/api/kbs/").status_code == 401 for key in keys)
    assert "您还没有 API 令牌。" in browser_client.get(PAGE).content.decode()


def test_creating_needs_the_session_and_its_csrf_token(browser_client, alice):
    # Without the CSRF token: refused.
    response = browser_client.post(TOKENS, {"name": "x"}, content_type="application/json")
    assert response.status_code == 403 and response.json()["error"]["code"] == "permission_denied"
    # With a token: refused, so a leaked key cannot mint longer-lived ones.
    key = token_issue(user=alice, name="script")[1]
    response = with_key(key).post(TOKENS, {"name": "more", "expires_in_days": 365}, content_type="application/json",
                                  HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 403
    assert response.json()["error"] == {"code": "permission_denied", "message": (
        "Create tokens signed in to the console, or with a username and password (POST /api/auth/token/), "
        "not with another token.")}
    assert ApiToken.objects.filter(user=alice).count() == 1


def test_the_lifetime_stays_within_the_sites_maximum(browser_client, alice, settings):
    assert create(browser_client, name="x", expires_in_days=366).json()["error"]["code"] == "invalid"
    assert create(browser_client, name="x", expires_in_days=None).json()["error"]["code"] == "invalid"
    assert create(browser_client, name="x", expires_in_days=0).status_code == 400
    assert create(browser_client, name="", expires_in_days=7).status_code == 400  # a name is required
    # Left out: the site's ZHIKU_TOKEN_TTL_DAYS.
    row = ApiToken.objects.get(pk=create(browser_client, name="default").json()["id"])
    assert abs(row.expiry - (timezone.now() + timedelta(days=settings.ZHIKU_TOKEN_TTL_DAYS))) < timedelta(minutes=1)
    settings.ZHIKU_TOKEN_MAX_DAYS = 180
    assert lifetime_choices() == [7, 30, 90, 180]
    assert create(browser_client, name="x", expires_in_days=365).status_code == 400
    # No maximum: a token may never expire, and the page offers it.
    settings.ZHIKU_TOKEN_MAX_DAYS = 0
    assert lifetime_choices() == [7, 30, 90, 365, None]
    created = create(browser_client, name="forever", expires_in_days=None).json()
    assert created["expiry"] is None and ApiToken.objects.get(pk=created["id"]).expiry is None
    assert with_key(created["token"]).get("/api/kbs/").status_code == 200
    assert '<option value="">永不过期</option>' in browser_client.get(PAGE).content.decode()


def test_the_sign_in_endpoint_takes_a_lifetime_too(api_client, alice):
    response = api_client.post("/api/auth/token/", {"username": "alice", "password": "pw-alice", "name": "cli",
                                                     "expires_in_days": 7}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["name"] == "cli" and body["key_prefix"] == body["token"][:8]
    row = ApiToken.objects.get(pk=body["id"])
    assert abs(row.expiry - (timezone.now() + timedelta(days=7))) < timedelta(minutes=1)
    response = api_client.post("/api/auth/token/", {"username": "alice", "password": "pw-alice", "expires_in_days": 9999},
                               format="json")
    assert response.status_code == 400
