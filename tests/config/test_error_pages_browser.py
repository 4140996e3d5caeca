"""The error pages and the API tokens page in headless Chromium, in Chinese and English, under the CSP
(templates/errors/, templates/accounts/tokens.html). Screenshots: /tmp/err-403-zh.png, /tmp/err-404-en.png, /tmp/tokens.png."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from datetime import timedelta

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, chromium, csp_violations, open_as, selenium, watch_csp

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def watched():
    driver = chromium()
    watch_csp(driver)
    yield driver
    driver.quit()


def text_of(driver, css: str) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, css).text


def api_status(server: str, key: str) -> int:
    request = urllib.request.Request(server + "/api/kbs/", headers={"Authorization": f"Token {key}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            json.load(response)
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_403_and_404_pages_in_both_languages(server, watched, make_user, make_kb):
    from selenium.webdriver.common.by import By

    from knowledge.services.kbs import membership_set
    from tests.browser import Wait

    alice, bob = make_user("alice"), make_user("bob")
    kb = make_kb(alice, "产品库")
    membership_set(kb=kb, user=bob, role="editor")
    wait = Wait(watched, 30)

    open_as(watched, server, bob, f"/kbs/{kb.pk}/settings/")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".error-page h1"))
    assert text_of(watched, ".error-page h1") == "您无权打开此页面"
    assert text_of(watched, "#error-reason") == "此操作需要该知识库的所有者角色。"
    assert text_of(watched, "#go-home") == "返回首页" and text_of(watched, "#username") == "bob"
    wait.until(lambda d: d.find_element(By.ID, "go-back").is_displayed())  # its script ran under the CSP
    watched.save_screenshot("/tmp/err-403-zh.png")

    watched.get(server + "/kbs/999999/")
    assert text_of(watched, ".error-page h1") == "页面不存在" and "错误 404" in text_of(watched, ".error-status")

    # English: the header's language switch.
    watched.find_element(By.CSS_SELECTOR, "#language-switch button[value=en]").click()
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, ".error-page h1").text == "Page not found")
    assert text_of(watched, "#go-home") == "Back to the home page"
    watched.save_screenshot("/tmp/err-404-en.png")
    watched.get(server + f"/kbs/{kb.pk}/settings/")
    assert text_of(watched, ".error-page h1") == "You cannot open this page"
    assert text_of(watched, "#error-reason") == "This action needs the owner role on the knowledge base."
    watched.find_element(By.ID, "go-back").click()
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, ".error-page h1").text == "Page not found")
    assert csp_violations(watched) == []


def test_the_tokens_page_creates_a_token_shown_once_and_revokes_it(server, watched, make_user):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from accounts.models import ApiToken
    from tests.browser import Wait

    alice = make_user("alice")
    wait = Wait(watched, 30)
    open_as(watched, server, alice, "/")
    watched.find_element(By.ID, "tokens-link").click()
    wait.until(lambda d: d.find_elements(By.ID, "token-form"))
    assert watched.find_element(By.TAG_NAME, "h1").text == "API 令牌"
    assert text_of(watched, "#no-tokens") == "您还没有 API 令牌。"

    watched.find_element(By.ID, "token-name").send_keys("夜间导入脚本")
    Select(watched.find_element(By.ID, "token-expiry")).select_by_visible_text("90 天")
    watched.find_element(By.ID, "token-create").click()
    wait.until(lambda d: d.find_element(By.ID, "new-token").is_displayed())
    key = watched.find_element(By.ID, "new-token-key").get_attribute("value")
    assert len(key) == 64
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#token-rows tr"))
    cells = [c.text for c in watched.find_elements(By.CSS_SELECTOR, "#token-rows tr td")]
    assert cells[0] == "夜间导入脚本" and cells[1] == key[:8] + "…" and cells[4] == "从未使用"
    watched.find_element(By.ID, "new-token-copy").click()
    wait.until(lambda d: d.find_element(By.ID, "new-token-copied").is_displayed())
    assert text_of(watched, "#new-token-copied") == "已复制。"
    watched.save_screenshot("/tmp/tokens.png")
    token = ApiToken.objects.get(user=alice)
    assert token.name == "夜间导入脚本" and abs((token.expiry - token.created) - timedelta(days=90)) < timedelta(minutes=1)

    # The key works against the API; after a reload it is nowhere on the page.
    assert api_status(server, key) == 200
    watched.refresh()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#token-rows tr"))
    assert key not in watched.page_source and watched.find_element(By.ID, "new-token").is_displayed() is False

    watched.find_element(By.CSS_SELECTOR, "#token-rows button.revoke").click()
    watched.switch_to.alert.accept()
    wait.until(lambda d: d.find_element(By.ID, "no-tokens").is_displayed())
    assert api_status(server, key) == 401 and not ApiToken.objects.filter(user=alice).exists()
    assert csp_violations(watched) == []
