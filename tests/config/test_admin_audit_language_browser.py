"""Chinese everywhere, seen in headless Chromium (issue 47 item 5): the admin's third-party sections (django-axes,
django-oauth-toolkit: config/third_party.py) and the preferences, and the audit log's action filter, read in the
reader's language, Chinese by default and English on request."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, open_as, selenium

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]


def shot(browser, tmp_path, name: str) -> Path:
    folder = Path(os.environ.get("ZHIKU_SCREENSHOT_DIR") or tmp_path)
    path = folder / name
    browser.save_screenshot(str(path))
    return path


def action_labels(browser) -> dict[str, str]:
    from selenium.webdriver.common.by import By

    return {o.get_attribute("value"): o.text.strip() for o in browser.find_elements(By.CSS_SELECTOR, "#f-action option")}


def test_the_admin_and_the_audit_filter_read_in_the_reader_s_language(server, browser, make_user, tmp_path):
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    root = make_user("root", superuser=True)
    open_as(browser, server, root, "/admin/")
    wait = Wait(browser, 30)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#content-main .module"))
    page = browser.find_element(By.ID, "content-main").get_attribute("textContent")  # as written, not as CSS cases it
    for words in ("登录防护", "登录尝试", "MCP 客户端的 OAuth 授权", "访问令牌", "刷新令牌", "授权码", "偏好设置"):
        assert words in page, words
    for english in ("Axes", "Django OAuth Toolkit", "Access tokens", "Preferences", "Model name"):
        assert english not in page, english
    shot(browser, tmp_path, "admin-zh.png")

    browser.get(f"{server}/audit/")
    wait.until(lambda d: d.find_elements(By.ID, "f-action"))
    labels = action_labels(browser)
    assert labels["auth.sign_in"] == "登录 (auth.sign_in)" and labels["auth.sign_out"] == "退出登录 (auth.sign_out)"
    assert not any("授权时间" in label for label in labels.values())
    shot(browser, tmp_path, "audit-filter-zh.png")

    browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
    browser.get(f"{server}/admin/")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#content-main .module"))
    page = browser.find_element(By.ID, "content-main").get_attribute("textContent")
    for words in ("Sign-in protection", "Access attempts", "MCP clients' OAuth sign-in", "Access tokens", "Preferences"):
        assert words in page, words
    assert "Django OAuth Toolkit" not in page and "登录防护" not in page
    shot(browser, tmp_path, "admin-en.png")

    browser.get(f"{server}/audit/")
    wait.until(lambda d: d.find_elements(By.ID, "f-action"))
    labels = action_labels(browser)
    assert labels["auth.sign_in"] == "Signed in (auth.sign_in)" and labels["auth.sign_out"].startswith("Signed out")
