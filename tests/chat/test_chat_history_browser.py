"""The chat page reopening a saved conversation after access was taken away (headless Chromium, daphne, websockets)."""
from __future__ import annotations

import pytest
from chat_helpers import SECRET, hr_member

from tests.browser import CHROMEDRIVER, CHROMIUM, open_as, selenium

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

QUESTION = "年终奖是多少？"


def test_the_page_no_longer_shows_a_restricted_passage_once_the_reader_left_its_group(server, browser, bob, hr_kb):
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    hr_member(bob, hr_kb)
    open_as(browser, server, bob, "/chat/")
    wait = Wait(browser, 20)
    browser.find_element(By.ID, "question").send_keys(QUESTION)
    browser.find_element(By.ID, "send").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".msg.assistant .meta")
               and d.find_element(By.CSS_SELECTOR, ".msg.assistant .meta").text)
    assert SECRET in browser.find_element(By.CSS_SELECTOR, ".msg.assistant .answer").text
    assert SECRET in browser.find_element(By.CSS_SELECTOR, ".msg.assistant .sources").text
    wait.until(lambda d: QUESTION in d.find_element(By.ID, "conversations").text)

    bob.groups.clear()
    browser.get(server + "/chat/")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#conversations .open"))
    browser.find_element(By.CSS_SELECTOR, "#conversations .open").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".msg.assistant .sources li"))

    answer = browser.find_element(By.CSS_SELECTOR, ".msg.assistant")
    assert "此回答已隐藏" in answer.find_element(By.CSS_SELECTOR, ".answer").text
    hidden = answer.find_elements(By.CSS_SELECTOR, ".sources li.redacted")
    assert hidden and all(li.text == "来源已不可见" for li in hidden)
    page = browser.find_element(By.TAG_NAME, "body").text
    assert SECRET not in page and "薪资制度" not in page
    assert QUESTION in browser.find_element(By.CSS_SELECTOR, ".msg.user").text  # the reader's own question stays
