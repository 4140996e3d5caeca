"""The KB health page in headless Chromium, in Chinese and English: a question told not found in chat is listed,
and "add as an FAQ entry" from its row writes the entry (daphne serving the test database)."""
from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from chat_helpers import DOCS
from test_health import ANSWER, MISSING, ask

from chat.models import GoldenRun
from knowledge.models import Chunk, Document, EvalQuestion
from tests.browser import CHROMEDRIVER, CHROMIUM, csp_violations, open_as, selenium, watch_csp

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]


@pytest.mark.usefixtures("judge_only")  # no reader to load: the question is not found by retrieval alone
def test_the_health_page_lists_a_not_found_question_and_adds_it_as_an_faq_entry(server, browser, judged_kb, alice,
                                                                               alice_token, tmp_path):
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    kb = judged_kb
    assert async_to_sync(ask)(alice_token, [kb.pk], MISSING)["verdict"] == "not_found"
    watch_csp(browser)
    open_as(browser, server, alice, f"/kbs/{kb.pk}/")
    wait = Wait(browser, 20)
    browser.find_element(By.ID, "kb-health").click()
    # The first report searches for the row's best passage in the server's process: its models may still be loading.
    Wait(browser, 90).until(lambda d: d.find_element(By.ID, "health-page").get_attribute("data-loaded") == "1")
    failing = browser.find_element(By.ID, "health-failing")
    assert MISSING in failing.text and "未找到和不确定" in browser.find_element(By.TAG_NAME, "body").text
    assert "最近提问" in failing.text and "加为常见问题条目" in failing.text
    browser.save_screenshot(str(tmp_path / "health_zh.png"))
    browser.save_screenshot("/tmp/health_zh.png")

    failing.find_element(By.CSS_SELECTOR, "button.health-faq").click()
    wait.until(lambda d: d.find_element(By.ID, "health-dialog").is_displayed())
    assert browser.find_element(By.ID, "health-dialog-question").text == MISSING
    browser.find_element(By.ID, "health-faq-answer").send_keys(ANSWER)
    browser.find_element(By.ID, "health-dialog-ok").click()
    wait.until(lambda d: not d.find_element(By.ID, "health-dialog").is_displayed())
    chunk = Chunk.objects.get(kb=kb, chunk_type="faq")
    assert chunk.metadata["question"] == MISSING and chunk.metadata["answer"] == ANSWER

    # A golden run that fell (chat.golden, tests/chat/test_golden.py) is shown on the KB page with its change.
    document = Document.objects.filter(kb=kb).first()
    GoldenRun.objects.create(kb=kb, trigger="change", kb_version=kb.version, document_id=document.pk, document_version=2,
                             questions=4, answered=2, rate=0.5, previous_rate=1.0, dropped=True)
    browser.get(f"{server}/kbs/{kb.pk}/")
    wait.until(lambda d: d.find_element(By.ID, "golden-drop").is_displayed())
    drop = browser.find_element(By.ID, "golden-drop").text
    assert "从 100% 降到 50%" in drop and f"文档 {document.pk}，第 2 版" in drop and "查看健康页" in drop
    browser.save_screenshot("/tmp/health_golden_zh.png")

    browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
    browser.get(f"{server}/kbs/{kb.pk}/health/")
    wait.until(lambda d: d.find_element(By.ID, "health-page").get_attribute("data-loaded") == "1")
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "Not found and uncertain" in body and "Most asked" in body and "Add as an FAQ entry" in body
    assert MISSING in browser.find_element(By.ID, "health-failing").text
    browser.save_screenshot("/tmp/health_en.png")
    assert csp_violations(browser) == []


def _golden_dialog(browser, question: str, expected: str):
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    [row] = [r for r in browser.find_elements(By.CSS_SELECTOR, "#health-failing tr[data-key]") if question in r.text]
    row.find_element(By.CSS_SELECTOR, "button.health-golden").click()
    Wait(browser, 20).until(lambda d: d.find_element(By.ID, "health-dialog").is_displayed())
    browser.find_element(By.ID, "health-expected").send_keys(expected)
    browser.find_element(By.ID, "health-dialog-ok").click()


@pytest.mark.usefixtures("judge_only")
def test_after_a_new_version_the_golden_set_gets_the_current_passage(server, browser, uncertain_kb, alice, alice_token,
                                                                     ingest):
    """A page loaded before a new version offers the replaced passage: saving it says so and offers the current ones
    (zh); a page loaded after offers the current passage at once (en). Either way the label names a serving chunk."""
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    kb = uncertain_kb
    price, memory = "专业版一年多少钱", "安装需要多少内存"
    for question in (price, memory):
        assert async_to_sync(ask)(alice_token, [kb.pk], question)["verdict"] == "uncertain"
    open_as(browser, server, alice, f"/kbs/{kb.pk}/health/")
    wait = Wait(browser, 90)
    wait.until(lambda d: d.find_element(By.ID, "health-page").get_attribute("data-loaded") == "1")
    ingest(kb, {"pro.md": DOCS["pro.md"].replace("命中测试", "命中测试和标注"),
                "install.md": DOCS["install.md"].replace("4 GB", "8 GB")})
    current = dict(Chunk.objects.filter(kb=kb).values_list("content", "pk"))

    _golden_dialog(browser, price, "9800 元")
    wait.until(lambda d: "新版本替换" in d.find_element(By.ID, "health-dialog-status").text)
    assert browser.find_element(By.ID, "health-dialog").is_displayed() and not EvalQuestion.objects.filter(kb=kb).exists()
    picks = browser.find_element(By.ID, "health-picks")
    assert "9800 元" in picks.text
    browser.save_screenshot("/tmp/health_replaced_zh.png")
    browser.find_element(By.ID, "health-dialog-ok").click()
    wait.until(lambda d: not d.find_element(By.ID, "health-dialog").is_displayed())
    label = EvalQuestion.objects.get(kb=kb)
    [chunk_id] = label.chunk_ids
    assert chunk_id in current.values() and "9800 元" in Chunk.objects.get(pk=chunk_id).content
    assert label.answers == ["9800 元"]

    browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
    browser.get(f"{server}/kbs/{kb.pk}/health/")
    wait.until(lambda d: d.find_element(By.ID, "health-page").get_attribute("data-loaded") == "1")
    failing = browser.find_element(By.ID, "health-failing").text
    assert "8 GB" in failing and "4 GB" not in failing  # the replaced passage is not offered
    _golden_dialog(browser, memory, "8 GB")
    browser.save_screenshot("/tmp/health_current_en.png")
    wait.until(lambda d: not d.find_element(By.ID, "health-dialog").is_displayed())
    label = EvalQuestion.objects.get(kb=kb, text=memory)
    assert label.chunk_ids == [current["需要 Python 3.11 和 PostgreSQL 16，内存至少 8 GB。"]] and label.answers == ["8 GB"]
