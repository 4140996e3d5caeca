"""End to end in headless Chromium against daphne: create an assistant in the console, issue a key (shown once), ask
in the try panel and see the streamed answer with a citation, under the pages' strict CSP."""
from __future__ import annotations

import hashlib

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, csp_violations, open_as, selenium, watch_csp

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

SCREENSHOT = "/tmp/console-assistant.png"


def test_create_an_assistant_issue_a_key_and_try_it(server, browser, alice, docs_kb):
    from selenium.webdriver.common.by import By

    from assistants.models import ApiKey, Assistant
    from chat.models import Conversation
    from tests.browser import Wait

    wait = Wait(browser, 60)
    watch_csp(browser)
    open_as(browser, server, alice, "/assistants/")
    browser.find_element(By.ID, "assistant-new").click()
    wait.until(lambda d: d.find_elements(By.ID, "assistant-form"))
    browser.find_element(By.ID, "a-name").send_keys("产品助手")
    browser.find_element(By.CSS_SELECTOR, f'input[name="kb"][value="{docs_kb.pk}"]').click()
    browser.find_element(By.ID, "a-opening_message").send_keys("你好，我可以回答知库产品的问题。")
    browser.find_element(By.ID, "a-suggested_questions").send_keys("知库专业版的价格是多少？\n怎么安装？")
    browser.set_window_size(1280, browser.execute_script("return document.documentElement.scrollHeight") + 120)
    browser.save_screenshot("/tmp/console-assistant-form.png")
    browser.set_window_size(1280, 900)
    browser.find_element(By.ID, "assistant-save").click()
    wait.until(lambda d: d.find_elements(By.ID, "assistant-page"))
    assistant = Assistant.objects.get(owner=alice, name="产品助手")
    assert assistant.kb_ids() == [docs_kb.pk] and assistant.suggested_questions == ["知库专业版的价格是多少？", "怎么安装？"]
    assert browser.current_url.endswith(f"/assistants/{assistant.pk}/")

    # A key: shown once, with its warning, and only its digest stored.
    keys = browser.find_element(By.ID, "assistant-keys")
    keys.find_element(By.CSS_SELECTOR, ".key-name").send_keys("内网机器人")
    keys.find_element(By.CSS_SELECTOR, ".key-create").click()
    wait.until(lambda d: keys.find_element(By.CSS_SELECTOR, ".key-value").text.startswith("zk-"))
    key = keys.find_element(By.CSS_SELECTOR, ".key-value").text
    assert "不会再显示" in keys.find_element(By.CSS_SELECTOR, ".key-once").text
    row = ApiKey.objects.get(assistant=assistant)
    assert row.digest == hashlib.sha256(key.encode()).hexdigest() and row.name == "内网机器人"
    wait.until(lambda d: "内网机器人" in keys.find_element(By.CSS_SELECTOR, ".key-rows").text)
    assert key not in keys.find_element(By.CSS_SELECTOR, ".key-rows").text
    assert key[:10] in keys.find_element(By.CSS_SELECTOR, ".key-rows").text

    # Ask in the try panel (a suggested question): the answer streams in with its citation and sources.
    browser.find_element(By.CSS_SELECTOR, "#try-suggested .suggestion").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#try-messages .msg.assistant.done"))
    answer = browser.find_element(By.CSS_SELECTOR, "#try-messages .msg.assistant.done")
    assert "9800" in answer.find_element(By.CSS_SELECTOR, ".answer").text
    assert answer.find_elements(By.CSS_SELECTOR, ".answer .cite")
    assert "知库专业版" in answer.find_element(By.CSS_SELECTOR, ".sources").text
    assert answer.find_elements(By.CSS_SELECTOR, ".verdict-line .badge")
    assert Conversation.objects.get(assistant=assistant).channel == "try"
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, '[data-usage="questions"]').text == "1")
    # The whole page, from the top, for a person to look at (the layout in Chinese).
    browser.set_window_size(1280, browser.execute_script("return document.documentElement.scrollHeight") + 120)
    browser.execute_script("window.scrollTo(0, 0)")
    browser.save_screenshot(SCREENSHOT)

    # Once put away, the key is gone from the page, and a reload never shows it again.
    keys.find_element(By.CSS_SELECTOR, ".key-done").click()
    assert keys.find_element(By.CSS_SELECTOR, ".key-value").get_attribute("textContent") == ""
    browser.refresh()
    wait.until(lambda d: "内网机器人" in d.find_element(By.CSS_SELECTOR, "#assistant-keys .key-rows").text)
    assert key not in browser.page_source
    assert csp_violations(browser) == []


def test_a_kb_owner_issues_and_revokes_a_retrieval_key_on_the_kb_page(server, browser, alice, docs_kb):
    from selenium.webdriver.common.by import By

    from assistants.keys import key_digest
    from assistants.models import ApiKey
    from tests.browser import Wait

    wait = Wait(browser, 60)
    watch_csp(browser)
    open_as(browser, server, alice, f"/kbs/{docs_kb.pk}/")
    section = wait.until(lambda d: d.find_element(By.ID, "kb-keys"))
    assert "检索密钥" in section.text
    wait.until(lambda d: "还没有密钥" in section.find_element(By.CSS_SELECTOR, ".key-rows").text)
    section.find_element(By.CSS_SELECTOR, ".key-name").send_keys("Dify")
    section.find_element(By.CSS_SELECTOR, ".key-rate").send_keys("20")
    section.find_element(By.CSS_SELECTOR, ".key-create").click()
    wait.until(lambda d: section.find_element(By.CSS_SELECTOR, ".key-value").text.startswith("zk-"))
    key = section.find_element(By.CSS_SELECTOR, ".key-value").text
    row = ApiKey.objects.get(kb=docs_kb)
    assert (row.kind, row.name, row.rate_limit, row.digest) == ("kb", "Dify", 20, key_digest(key))

    wait.until(lambda d: section.find_elements(By.CSS_SELECTOR, ".key-revoke"))
    section.find_element(By.CSS_SELECTOR, ".key-revoke").click()
    browser.switch_to.alert.accept()
    wait.until(lambda d: "还没有密钥" in section.find_element(By.CSS_SELECTOR, ".key-rows").text)
    row.refresh_from_db()
    assert row.revoked_at is not None
    assert csp_violations(browser) == []
