"""Issue 47 item 5: the API reference (Swagger UI at /api/docs/) shows the operations' summaries, tags and, opened,
their descriptions in the reader's language: Chinese for a Chinese browser, English once the console's language
switch says so."""
from __future__ import annotations

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, chromium, selenium

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def browser():
    driver = chromium()
    driver.set_window_size(1280, 1000)
    yield driver
    driver.quit()


TOKEN_ZH = "每次调用签发一个新令牌（一个用户可持有多个：每个客户端一个）"
TOKEN_EN = "Each call issues a new token (a user may hold several: one per client)"


@pytest.mark.parametrize(("language", "tag", "summary", "absent", "described", "undescribed"), [
    (None, "知识库", "创建知识库（调用者为其所有者）", "Create a knowledge base (the caller owns it)", TOKEN_ZH, TOKEN_EN),
    ("en", "Knowledge bases", "Create a knowledge base (the caller owns it)", "创建知识库（调用者为其所有者）", TOKEN_EN, TOKEN_ZH),
])
def test_swagger_ui_speaks_the_readers_language(server, browser, language, tag, summary, absent, described, undescribed):
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    if language:
        browser.get(server + "/static/does-not-exist")  # any page of the site, to set its cookie
        browser.add_cookie({"name": "django_language", "value": language, "path": "/"})
    browser.get(server + "/api/docs/")
    Wait(browser, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".swagger-ui .opblock"))
    body = browser.find_element(By.TAG_NAME, "body").text
    browser.save_screenshot(f"/tmp/api-docs-{language or 'zh'}.png")
    headings = [h.text for h in browser.find_elements(By.CSS_SELECTOR, ".opblock-tag")]
    assert headings and headings[0].startswith(tag), headings[:3]
    assert summary in body and absent not in body
    assert "/api/kbs/" in body  # the paths themselves never change
    # Opened, an operation shows its description in the same language (POST /api/auth/token/).
    token = browser.find_element(By.CSS_SELECTOR, ".opblock-post .opblock-summary-path[data-path='/api/auth/token/']")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", token)
    token.click()
    Wait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".opblock.is-open .opblock-description-wrapper"))
    opened = browser.find_element(By.CSS_SELECTOR, ".opblock.is-open")
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'});", opened)
    browser.save_screenshot(f"/tmp/api-docs-{language or 'zh'}-description.png")
    text = opened.find_element(By.CSS_SELECTOR, ".opblock-description-wrapper").text
    assert described in text and undescribed not in text and "ZHIKU_TOKEN_TTL_DAYS" in text
