"""The console's sign-in form with a directory password, in headless Chromium, against a real slapd (tests/accounts/slapd.py)."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By

from tests.accounts.slapd import PEOPLE, READER_DN, READER_PASSWORD, SUFFIX, group_dn, slapd_running
from tests.browser import CHROMEDRIVER, CHROMIUM, Wait, daphne, selenium

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]


def test_sign_in_with_a_directory_password_in_the_browser(tmp_path, browser):
    with slapd_running() as directory, daphne(
            tmp_path / "daphne.log", ZHIKU_LDAP_SERVER_URI=directory.uri, ZHIKU_LDAP_BIND_DN=READER_DN,
            ZHIKU_LDAP_BIND_PASSWORD=READER_PASSWORD, ZHIKU_LDAP_USER_SEARCH_BASE=f"ou=people,{SUFFIX}",
            ZHIKU_LDAP_GROUP_SEARCH_BASE=f"ou=groups,{SUFFIX}", ZHIKU_LDAP_STAFF_GROUP=group_dn("zhiku-admins"),
            ZHIKU_LDAP_GROUP_MAP="kb-editors=编辑组") as server:
        browser.get(server + "/accounts/login/?next=/")
        assert "用户名（企业目录账号）" in browser.find_element(By.ID, "password-form").text
        assert not browser.find_elements(By.ID, "sso-start")  # no OpenID provider configured: no button
        browser.find_element(By.NAME, "username").send_keys("zhang.san")
        browser.find_element(By.NAME, "password").send_keys("wrong")
        browser.find_element(By.CSS_SELECTOR, "#password-form button[type=submit]").click()
        # The refusal is a new page: wait for it (reading the old form while it is replaced is a stale element).
        Wait(browser, 20, ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda d: "用户名或密码不正确" in d.find_element(By.ID, "password-form").text)

        browser.find_element(By.NAME, "password").send_keys(PEOPLE["zhang.san"][2])
        browser.find_element(By.CSS_SELECTOR, "#password-form button[type=submit]").click()
        Wait(browser, 20).until(lambda d: d.current_url == server + "/")
        assert "zhang.san" in browser.find_element(By.CSS_SELECTOR, ".site-header").text
        user = User.objects.get(username="zhang.san")
        assert user.email == "zhang.san@zhiku.test" and user.is_staff
        assert list(user.groups.values_list("name", flat=True)) == ["编辑组"]
