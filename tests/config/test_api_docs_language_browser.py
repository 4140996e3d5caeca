"""Issue 47 item 5: the API reference (Swagger UI at /api/docs/) shows the operations' summaries and tags in the
reader's language: Chinese for a Chinese browser, English once the console's language switch says so."""
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


@pytest.mark.parametrize(("language", "tag", "summary", "absent"), [
    (None, "知识库", "创建知识库（调用者为其所有者）", "Create a knowledge base (the caller owns it)"),
    ("en", "Knowledge bases", "Create a knowledge base (the caller owns it)", "创建知识库（调用者为其所有者）"),
])
def test_swagger_ui_speaks_the_readers_language(server, browser, language, tag, summary, absent):
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
