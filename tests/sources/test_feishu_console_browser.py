"""Headless Chromium, in Chinese and in English: an editor adds a Feishu source on the KB page with its own form
(App ID, App Secret, space id), runs it against the Feishu open platform on loopback and reads the run's counts."""
from __future__ import annotations

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, selenium
from tests.sources.console_flow import open_kb_page, open_source_form, run_and_count, run_button, shot
from tests.sources.feishu_server import FeishuServer

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

WORDS = {"zh-hans": {"app_id": "App ID", "space": "知识空间 ID", "succeeded": "成功"},
         "en": {"app_id": "App ID", "space": "Wiki space ID", "succeeded": "succeeded"}}


@pytest.fixture
def feishu():
    with FeishuServer() as server:
        server.put_node("wikPrice", "价格说明", parts=[("h1", "价格"), ("table", [["版本", "年费"], ["专业版", "一万二千元"]])])
        server.put_node("wikFaq", "常见问题", parts=[("p", "登录问题请联系管理员。")])
        yield server


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_an_editor_adds_a_feishu_source_and_runs_it(sources_console, feishu, browser, alice, kb, tmp_path, language):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from tests.browser import Wait

    words = WORDS[language]
    open_kb_page(browser, sources_console, alice, kb, language)
    open_source_form(browser)
    Select(browser.find_element(By.ID, "add-kind")).select_by_value("feishu")
    form_text = browser.find_element(By.ID, "sources").text
    assert words["app_id"] in form_text and words["space"] in form_text
    browser.find_element(By.ID, "add-name").send_keys("飞书知识库")
    base = browser.find_element(By.ID, "add-feishu-base_url")
    base.clear()
    base.send_keys(feishu.base_url)
    browser.find_element(By.ID, "add-feishu-app_id").send_keys(feishu.app_id)
    browser.find_element(By.ID, "add-feishu-space_id").send_keys(feishu.space_id)
    browser.find_element(By.ID, "add-feishu-secret-app_secret").send_keys(feishu.app_secret)
    browser.execute_script("document.getElementById('sources').scrollIntoView()")
    shot(browser, tmp_path, f"feishu-add-{language}.png")
    browser.find_element(By.ID, "source-add-submit").click()
    Wait(browser, 20).until(lambda d: d.find_elements(By.ID, "source-page"))
    assert feishu.app_secret not in browser.page_source

    assert run_and_count(browser, run_button(browser), words["succeeded"]) == ["2", "0", "0", "0", "0"]
    shot(browser, tmp_path, f"feishu-source-{language}.png")
