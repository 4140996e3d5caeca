"""The KB page's "Add a source" form is folded until asked for (issue 47 item 6: with it open, its fields for every
kind made the page 4,256 px tall), in Chinese and English; opened, it is the whole form."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, Wait, csp_violations, open_as, selenium, watch_csp

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

DOCS = {"退货政策.md": "# 退货政策\n\n购买商品七天内可以无理由退货。\n", "会员积分.md": "# 会员积分\n\n每消费一元累积一个积分。\n"}
WORDS = {"zh-hans": "添加数据源", "en": "Add a source"}


def page_height(browser) -> int:
    return browser.execute_script("return document.documentElement.scrollHeight")


def full_shot(browser, name: str) -> None:
    """The whole page in one screenshot (the window made as tall as the page, then put back)."""
    folder = Path(os.environ.get("ZHIKU_SCREENSHOT_DIR") or "/tmp")
    browser.set_window_size(1280, page_height(browser) + 140)
    browser.save_screenshot(str(folder / name))
    browser.set_window_size(1280, 900)


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_the_source_form_is_folded_until_asked_for(server, browser, alice, kb, ingest, language):
    from selenium.webdriver.common.by import By

    ingest(kb, DOCS)
    watch_csp(browser)
    browser.get(server + "/static/zhiku/console.css")
    if language == "en":
        browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
    open_as(browser, server, alice, f"/kbs/{kb.pk}/")
    Wait(browser, 20).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#doc-rows tr[data-doc-id]")) == 2)
    disclosure = browser.find_element(By.ID, "source-add")
    summary = disclosure.find_element(By.TAG_NAME, "summary")
    assert summary.text.endswith(WORDS[language]) and summary.is_displayed()
    assert disclosure.get_attribute("open") is None and not browser.find_element(By.ID, "add-name").is_displayed()
    folded = page_height(browser)
    full_shot(browser, f"kb47-folded-{language}.png")

    summary.click()
    Wait(browser, 5).until(lambda d: d.find_element(By.ID, "add-name").is_displayed())
    assert browser.find_element(By.ID, "source-add-submit").is_displayed()
    unfolded = page_height(browser)
    full_shot(browser, f"kb47-unfolded-{language}.png")
    print(f"KB page height at 1280×900 ({language}): {folded} px folded, {unfolded} px with the source form open")
    assert unfolded - folded > 600       # the form is tall: folded, it no longer lengthens the page
    assert folded < 2400
    assert csp_violations(browser) == []
