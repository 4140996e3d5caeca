"""The chat page's dead ends, closed (issue 47 item 6), in headless Chromium in Chinese and English: a 👎 (and a 👍) is
thanked, saying what it taught; conversations are searched and renamed in the list; on a phone the question box stays
at the bottom of the screen with the history scrolling above it."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_chat_browser import ask, sign_in

from chat.models import Conversation, Feedback, Message, Role
from tests.browser import CHROMEDRIVER, CHROMIUM, Wait, csp_violations, selenium, watch_csp

pytestmark = [
    pytest.mark.usefixtures("judge_only"),
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

WORDS = {
    "zh-hans": {"thanks_down": "谢谢！已记录：知识库的所有者会在它的健康页看到这个回答和你写的原因。",
                "wrong": "引用的段落已标为不对", "queued": "审核队列",
                "thanks_up": "谢谢！已记为有用。", "toggle": "对话与知识库", "search": "搜索对话",
                "no_match": "没有对话包含这些字词。", "rename": "重命名", "rename_failed": "重命名失败："},
    "en": {"thanks_down": "Thank you: recorded. The knowledge base's owners see this answer, with your reason, on its health page.",
           "wrong": "The cited passage is now marked wrong",
           "queued": "review queue", "thanks_up": "Thank you: recorded as useful.",
           "toggle": "Conversations and knowledge bases", "search": "Search conversations",
           "no_match": "No conversation holds these words.", "rename": "Rename", "rename_failed": "Could not rename: "},
}
PHONE = {"width": 390, "height": 844}


def shot(browser, name: str) -> None:
    folder = Path(os.environ.get("ZHIKU_SCREENSHOT_DIR") or "/tmp")
    browser.save_screenshot(str(folder / name))


def open_chat(server: str, browser, user, language: str) -> None:
    sign_in(server, browser, user)
    if language == "en":
        browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
    browser.get(server + "/chat/")


def conversation_with(user, kb, title: str, turns: list[tuple[str, str]]) -> Conversation:
    conversation = Conversation.objects.create(user=user, title=title, kb_ids=[kb.pk])
    Message.objects.bulk_create([Message(conversation=conversation, role=role, content=text, hit=True if role == Role.ASSISTANT else None)
                                 for question, answer in turns
                                 for role, text in ((Role.USER, question), (Role.ASSISTANT, answer))])
    return conversation


def listed(browser) -> list[str]:
    from selenium.webdriver.common.by import By

    return [b.text for b in browser.find_elements(By.CSS_SELECTOR, "#conversations button.open")]


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_a_thumbs_down_is_thanked_and_says_what_it_taught(server, browser, alice, bob, chat_kb, language):
    """An owner's 👎 「wrong passage」 (a confirmed label) in Chinese; a viewer's (waiting for review) in English; a
    👍 thanked too. The reason is sent with Enter."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from knowledge.services.kbs import membership_set

    words = WORDS[language]
    voter = alice if language == "zh-hans" else bob
    if voter == bob:
        membership_set(kb=chat_kb, role="viewer", user=bob)
    watch_csp(browser)
    open_chat(server, browser, voter, language)
    answer = ask(browser, "知库专业版的价格是多少？")
    message = Message.objects.filter(role="assistant").latest("id")
    wait = Wait(browser, 20)

    answer.find_element(By.CSS_SELECTOR, '.feedback button[data-rating="down"]').click()
    reason = wait.until(lambda d: answer.find_element(By.CSS_SELECTOR, ".feedback input[type=text]"))
    answer.find_element(By.CSS_SELECTOR, ".feedback input.wrong-passage").click()
    reason.send_keys("价格写的是旧的", Keys.ENTER)
    thanks = wait.until(lambda d: answer.find_element(By.CSS_SELECTOR, ".feedback .feedback-thanks"))
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", answer.find_element(By.CSS_SELECTOR, ".feedback"))
    shot(browser, f"chat47-thanks-down-{language}.png")
    assert words["thanks_down"] in thanks.text
    assert (words["wrong"] if voter == alice else words["queued"]) in thanks.text
    assert thanks.get_attribute("role") == "status"
    assert thanks.get_attribute("data-labelled") == ("confirmed" if voter == alice else "pending")
    assert not answer.find_elements(By.CSS_SELECTOR, ".feedback input")  # the form is closed
    assert "chosen" in answer.find_element(By.CSS_SELECTOR, '.feedback button[data-rating="down"]').get_attribute("class")
    feedback = Feedback.objects.get(message=message, user=voter)
    assert (feedback.rating, feedback.reason, feedback.reason_code) == ("down", "价格写的是旧的", "wrong_passage")

    answer.find_element(By.CSS_SELECTOR, '.feedback button[data-rating="up"]').click()
    wait.until(lambda d: words["thanks_up"] in answer.find_element(By.CSS_SELECTOR, ".feedback .feedback-thanks").text)
    assert Feedback.objects.get(message=message, user=voter).rating == "up"

    # A plain 👎 (another reason) is thanked too, and teaches nothing: the vote's label is withdrawn.
    answer.find_element(By.CSS_SELECTOR, '.feedback button[data-rating="down"]').click()
    reason = wait.until(lambda d: answer.find_element(By.CSS_SELECTOR, ".feedback input[type=text]"))
    reason.send_keys("太简短")
    answer.find_element(By.CSS_SELECTOR, ".feedback button.send-feedback").click()
    thanks = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, ".feedback .feedback-thanks[data-labelled='']"))
    assert thanks.text == words["thanks_down"]
    feedback = Feedback.objects.get(message=message, user=voter)
    assert (feedback.rating, feedback.reason, feedback.reason_code) == ("down", "太简短", "")
    assert csp_violations(browser) == []


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_conversations_are_searched_and_renamed_in_the_list(server, browser, alice, bob, kb, language):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    words = WORDS[language]
    leave = conversation_with(alice, kb, "年假", [("年假有几天？", "每年十天带薪年假。")])
    conversation_with(alice, kb, "退货", [("退货运费谁出？", "买家承担，质量问题除外。")])
    conversation_with(alice, kb, "价格", [("专业版多少钱？", "每年 9800 元。")])
    conversation_with(bob, kb, "bob 的运费", [("运费？", "买家。")])
    watch_csp(browser)
    open_chat(server, browser, alice, language)
    wait = Wait(browser, 20)
    wait.until(lambda d: listed(d) == ["价格", "退货", "年假"])

    search = browser.find_element(By.ID, "conversation-search")
    assert search.get_attribute("placeholder") == words["search"]
    search.send_keys("运费")                       # a question's words: Bob's conversation is not Alice's
    wait.until(lambda d: listed(d) == ["退货"])
    search.send_keys(Keys.CONTROL, "a", Keys.BACKSPACE)
    search.send_keys("质量问题")                    # an answer's words
    wait.until(lambda d: listed(d) == ["退货"])
    search.send_keys(Keys.CONTROL, "a", Keys.BACKSPACE)
    search.send_keys("没有这回事")
    wait.until(lambda d: listed(d) == [] and d.find_element(By.ID, "conversations-no-match").is_displayed())
    assert browser.find_element(By.ID, "conversations-no-match").text == words["no_match"]
    assert not browser.find_element(By.ID, "conversations-empty").is_displayed()
    search.send_keys(Keys.CONTROL, "a", Keys.BACKSPACE)
    wait.until(lambda d: listed(d) == ["价格", "退货", "年假"])

    row = browser.find_element(By.CSS_SELECTOR, f"#conversations li[data-conversation='{leave.pk}']")
    rename = row.find_element(By.CSS_SELECTOR, "button.rename")
    assert rename.get_attribute("title") == words["rename"]
    rename.click()
    box = wait.until(lambda d: row.find_element(By.CSS_SELECTOR, "input.rename-input"))
    assert box.get_attribute("value") == "年假"
    box.send_keys("（作废）", Keys.ESCAPE)            # Escape keeps the old title
    wait.until(lambda d: listed(d) == ["价格", "退货", "年假"])
    row = browser.find_element(By.CSS_SELECTOR, f"#conversations li[data-conversation='{leave.pk}']")
    row.find_element(By.CSS_SELECTOR, "button.rename").click()
    box = wait.until(lambda d: row.find_element(By.CSS_SELECTOR, "input.rename-input"))
    box.send_keys(Keys.CONTROL, "a", Keys.BACKSPACE)
    box.send_keys("   ", Keys.ENTER)               # blank: the API's 400, said under the box, which stays
    error = wait.until(lambda d: row.find_element(By.CSS_SELECTOR, ".rename-error"))
    wait.until(lambda d: error.is_displayed() and error.text.startswith(words["rename_failed"]))
    assert len(error.text) > len(words["rename_failed"].strip()) and error.get_attribute("role") == "alert"
    assert row.find_element(By.CSS_SELECTOR, "input.rename-input").is_displayed()
    shot(browser, f"chat47-rename-error-{language}.png")
    leave.refresh_from_db()
    assert leave.title == "年假"
    box.send_keys(Keys.ESCAPE)
    wait.until(lambda d: listed(d) == ["价格", "退货", "年假"])
    row = browser.find_element(By.CSS_SELECTOR, f"#conversations li[data-conversation='{leave.pk}']")
    row.find_element(By.CSS_SELECTOR, "button.rename").click()
    box = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, f"li[data-conversation='{leave.pk}'] input.rename-input"))
    box.send_keys(Keys.CONTROL, "a", Keys.BACKSPACE)
    box.send_keys("2026 年假期", Keys.ENTER)
    wait.until(lambda d: listed(d) == ["价格", "退货", "2026 年假期"])  # renamed, in its place
    leave.refresh_from_db()
    assert leave.title == "2026 年假期"
    search.send_keys("2026")
    wait.until(lambda d: listed(d) == ["2026 年假期"])
    shot(browser, f"chat47-search-rename-{language}.png")
    assert csp_violations(browser) == []


def geometry(browser) -> dict:
    return browser.execute_script("""
        const box = document.getElementById("ask-form").getBoundingClientRect();
        const msgs = Array.from(document.querySelectorAll("#messages .msg")).map((m) => m.getBoundingClientRect());
        return {top: box.top, bottom: box.bottom, viewport: window.innerHeight, width: window.innerWidth,
                scroll: window.scrollY, scrollable: document.documentElement.scrollHeight - window.innerHeight,
                last: msgs.length ? msgs[msgs.length - 1].bottom : null, count: msgs.length};
    """)


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_on_a_phone_the_question_box_stays_at_the_bottom_under_the_history(server, browser, alice, kb, language):
    """390×844, with 30 earlier conversations (the list once pushed the box below the first screen): the side panel
    folds behind a button; a long history scrolls above the question box, which stays at the bottom of the screen at
    every scroll position; on a wide screen the side panel stays open."""
    from selenium.webdriver.common.by import By

    words = WORDS[language]
    for i in range(30):
        conversation_with(alice, kb, f"旧对话 {i}", [("问题", "回答")])
    turns = [(f"第 {i} 个问题：年假有几天？", "每年十天带薪年假，入职满一年后可以休。" * 4) for i in range(1, 9)]
    history = conversation_with(alice, kb, "年假问答", turns)
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {**PHONE, "deviceScaleFactor": 2, "mobile": True})
    watch_csp(browser)
    open_chat(server, browser, alice, language)
    wait = Wait(browser, 20)
    toggle = browser.find_element(By.ID, "side-toggle")
    assert toggle.is_displayed() and words["toggle"] in toggle.text
    assert not browser.find_element(By.ID, "kb-list").is_displayed()       # folded
    shot(browser, f"chat47-phone-empty-{language}.png")
    empty = geometry(browser)
    assert empty["width"] == PHONE["width"] and abs(empty["bottom"] - empty["viewport"]) <= 1

    toggle.click()
    wait.until(lambda d: d.find_element(By.ID, "kb-list").is_displayed() and listed(d)[:2] == ["年假问答", "旧对话 29"])
    shot(browser, f"chat47-phone-side-{language}.png")
    browser.find_element(By.CSS_SELECTOR, f"#conversations li[data-conversation='{history.pk}'] button.open").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#messages .msg")) == 16)
    assert not browser.find_element(By.ID, "kb-list").is_displayed()       # folded again once a conversation opens
    opened = geometry(browser)                                              # the latest exchange in sight at once,
    shot(browser, f"chat47-phone-opened-{language}.png")                    # just above the question box
    assert opened["scroll"] > 0 and abs(opened["bottom"] - opened["viewport"]) <= 1
    assert opened["top"] - 80 <= opened["last"] <= opened["top"] + 1
    browser.execute_script("window.scrollTo(0, document.documentElement.scrollHeight)")
    wait.until(lambda d: geometry(d)["scroll"] > 0)
    at_end = geometry(browser)
    shot(browser, f"chat47-phone-history-end-{language}.png")
    assert at_end["scrollable"] > PHONE["height"]                           # the history is longer than the screen
    assert abs(at_end["bottom"] - at_end["viewport"]) <= 1                  # the box at the bottom of the screen
    assert at_end["last"] <= at_end["top"] + 1                              # the last answer above it, not under it
    browser.execute_script("window.scrollTo(0, 0)")
    wait.until(lambda d: geometry(d)["scroll"] == 0)
    at_top = geometry(browser)
    shot(browser, f"chat47-phone-history-top-{language}.png")
    assert abs(at_top["bottom"] - at_top["viewport"]) <= 1 and at_top["top"] > at_top["viewport"] / 2
    question = browser.find_element(By.ID, "question")
    assert question.is_displayed() and browser.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return document.elementFromPoint(r.left + 5, r.top + 5) === arguments[0]",
        question)                                                           # nothing covers it
    assert csp_violations(browser) == []

    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    browser.set_window_size(1280, 900)
    browser.get(server + "/chat/")
    wait.until(lambda d: listed(d)[:1] == ["年假问答"])
    assert browser.find_element(By.ID, "kb-list").is_displayed() and not browser.find_element(By.ID, "side-toggle").is_displayed()
