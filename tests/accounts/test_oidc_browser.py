"""Single sign-on in headless Chromium against a real OpenID provider (npm's oidc-provider, tests/accounts/oidc.py):
the button on the console's sign-in page, the provider's own sign-in page, back on the console signed in."""
from __future__ import annotations

from urllib.parse import unquote_plus

import pytest
import requests
from django.contrib.auth.models import User
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC

from accounts.models import SsoIdentity
from tests.accounts.oidc import provider_running
from tests.browser import CHROMEDRIVER, CHROMIUM, Wait, daphne, free_port, selenium

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

USERS = {"chen.liu": {"password": "provider-pw-1", "sub": "u-1001", "email": "chen.liu@corp.test", "name": "陈六",
                      "given_name": "六", "family_name": "陈", "groups": ["kb-editors", "zhiku-admins"]}}


def provider_sign_in(browser, login: str, password: str) -> None:
    Wait(browser, 20).until(EC.presence_of_element_located((By.ID, "login")))
    browser.find_element(By.ID, "login").send_keys(login)
    browser.find_element(By.ID, "password").send_keys(password)
    browser.find_element(By.ID, "submit").click()


def test_sign_in_with_sso_creates_the_user_and_maps_groups_and_staff(tmp_path, browser):
    port = free_port()
    callback = f"http://127.0.0.1:{port}/accounts/sso/callback/"
    with provider_running(tmp_path, redirect_uris=[callback], users=USERS) as provider, \
            daphne(tmp_path / "daphne.log", port=port, ZHIKU_OIDC_STAFF_GROUP="zhiku-admins",
                   **provider.env(callback)) as server:
        # The provider refuses an authorization request without a PKCE challenge: the sign-in below shows zhiku sends one.
        refused = requests.get(provider.discovery()["authorization_endpoint"], allow_redirects=False, timeout=10, params={
            "client_id": "zhiku-console", "response_type": "code", "scope": "openid", "state": "s", "redirect_uri": callback})
        assert refused.status_code in (302, 303) and "error=invalid_request" in refused.headers["Location"]
        assert "PKCE" in unquote_plus(refused.headers["Location"])

        browser.get(server + "/accounts/login/?next=/")
        button = browser.find_element(By.ID, "sso-start")
        assert button.text == "使用企业账号登录"
        button.click()
        assert browser.current_url.startswith(provider.issuer + "/interaction/")  # the provider's page, not ours
        provider_sign_in(browser, "chen.liu", "wrong")
        # The provider answers the wrong password with its page again: wait for that page, not the one submitted.
        Wait(browser, 20).until(lambda d: "Invalid login" in d.find_element(By.ID, "error").text)
        provider_sign_in(browser, "chen.liu", "provider-pw-1")
        Wait(browser, 20).until(lambda d: d.current_url == server + "/")
        assert "chen.liu" in browser.find_element(By.CSS_SELECTOR, ".site-header").text

        user = User.objects.get(username="chen.liu")
        assert (user.email, user.first_name, user.last_name) == ("chen.liu@corp.test", "六", "陈")
        assert set(user.groups.values_list("name", flat=True)) == {"kb-editors", "zhiku-admins"}
        assert user.is_staff and not user.has_usable_password()
        identity = SsoIdentity.objects.get(user=user)
        assert (identity.source, identity.issuer, identity.subject) == ("oidc", provider.issuer, "u-1001")

        # The provider drops the admin group: at the next sign-in the group and the staff flag go.
        provider.users_set({"chen.liu": {**USERS["chen.liu"], "groups": ["kb-editors"]}})
        browser.delete_all_cookies()  # both sites are on 127.0.0.1: signed out of each
        browser.get(server + "/accounts/login/")
        browser.find_element(By.ID, "sso-start").click()
        provider_sign_in(browser, "chen.liu", "provider-pw-1")
        Wait(browser, 20).until(lambda d: d.current_url == server + "/")
        user.refresh_from_db()
        assert set(user.groups.values_list("name", flat=True)) == {"kb-editors"} and not user.is_staff
        assert User.objects.filter(username="chen.liu").count() == 1


def test_a_provider_user_named_like_a_local_account_is_refused(tmp_path, browser, make_user):
    make_user("chen.liu")
    port = free_port()
    callback = f"http://127.0.0.1:{port}/accounts/sso/callback/"
    with provider_running(tmp_path, redirect_uris=[callback], users=USERS) as provider, \
            daphne(tmp_path / "daphne.log", port=port, **provider.env(callback)) as server:
        browser.get(server + "/static/zhiku/console.css")
        browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})  # this time in English
        browser.get(server + "/accounts/login/")
        button = browser.find_element(By.ID, "sso-start")
        assert button.text == "Sign in with SSO"
        button.click()
        provider_sign_in(browser, "chen.liu", "provider-pw-1")
        Wait(browser, 20).until(lambda d: d.current_url.startswith(server + "/accounts/login/"))
        assert browser.find_element(By.ID, "sso-failed").text.startswith("Single sign-on did not complete.")
        assert not SsoIdentity.objects.exists()
