"""Headless Chromium, in Chinese and in English: an editor adds a Yuque source on the KB page with its own form
(address, knowledge base, token), runs it against the Yuque OpenAPI server on loopback and reads the run's counts."""
from __future__ import annotations

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, selenium
from tests.sources.console_flow import open_kb_page, open_source_form, run_and_count, run_button, shot
from tests.sources.yuque_server import YuqueServer

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

WORDS = {"zh-hans": {"address": "语雀地址", "book": "知识库", "succeeded": "成功"},
         "en": {"address": "Yuque address", "book": "Knowledge base", "succeeded": "succeeded"}}


@pytest.fixture
def yuque():
    with YuqueServer() as server:
        server.put_doc("price", "价格说明", body="## 价格\n\n| 版本 | 年费 |\n| --- | --- |\n| 专业版 | 一万二千元 |\n")
        server.put_doc("faq", "常见问题", fmt="lake", body="<!doctype lake>", body_html="<p>登录问题请联系管理员。</p>")
        yield server


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_an_editor_adds_a_yuque_source_and_runs_it(sources_console, yuque, browser, alice, kb, tmp_path, language):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from tests.browser import Wait

    words = WORDS[language]
    open_kb_page(browser, sources_console, alice, kb, language)
    open_source_form(browser)
    Select(browser.find_element(By.ID, "add-kind")).select_by_value("yuque")
    form_text = browser.find_element(By.ID, "sources").text
    assert words["address"] in form_text and words["book"] in form_text
    browser.find_element(By.ID, "add-name").send_keys("语雀知识库")
    base = browser.find_element(By.ID, "add-yuque-base_url")
    base.clear()
    base.send_keys(yuque.base_url)
    browser.find_element(By.ID, "add-yuque-namespace").send_keys(yuque.namespace)
    browser.find_element(By.ID, "add-yuque-secret-token").send_keys(yuque.token)
    browser.execute_script("document.getElementById('sources').scrollIntoView()")
    shot(browser, tmp_path, f"yuque-add-{language}.png")
    browser.find_element(By.ID, "source-add-submit").click()
    Wait(browser, 20).until(lambda d: d.find_elements(By.ID, "source-page"))
    assert yuque.token not in browser.page_source

    assert run_and_count(browser, run_button(browser), words["succeeded"]) == ["2", "0", "0", "0", "0"]
    shot(browser, tmp_path, f"yuque-source-{language}.png")
