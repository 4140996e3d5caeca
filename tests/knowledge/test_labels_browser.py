"""The review queue and hit testing's label buttons in headless Chromium, in Chinese and English: a viewer's vote waits
in the queue and an owner confirms it; "this passage answers this question" on a hit-testing result makes a label."""
from __future__ import annotations

import pytest

from knowledge.models import Chunk, EvalQuestion, LabelSource, LabelStatus
from knowledge.services.kbs import membership_set
from knowledge.services.labels import label_from_vote
from tests.browser import CHROMEDRIVER, CHROMIUM, csp_violations, open_as, selenium, watch_csp

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("judge_only"),
]

DOCS = {"venue.md": "# 场地\n\n公司年会在杭州西湖国宾馆举办，可容纳五百人。\n",
        "leave.md": "# 假期\n\n员工每年享有十天带薪年假。\n"}


def test_an_owner_confirms_a_vote_and_labels_a_passage_on_the_hit_testing_page(server, browser, kb, ingest, alice, bob):
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    ingest(kb, DOCS)
    membership_set(kb=kb, role="viewer", user=bob)
    venue = Chunk.objects.get(kb=kb, document__source_name="venue.md")
    vote = label_from_vote(user=bob, kb=kb, question="公司年会在哪里举办？", message_id=1, chunk_id=venue.pk, wrong=False,
                           trusted=False)
    assert vote is not None and vote.status == LabelStatus.PENDING
    watch_csp(browser)
    wait = Wait(browser, 30)

    open_as(browser, server, alice, f"/kbs/{kb.pk}/")
    browser.find_element(By.LINK_TEXT, "标注审核").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f"tr[data-label-id='{vote.pk}']"))
    row = browser.find_element(By.CSS_SELECTOR, f"tr[data-label-id='{vote.pk}']")
    assert "公司年会在哪里举办" in row.text and "回答被点赞 👍" in row.text and "bob" in row.text
    assert "西湖国宾馆" in row.text and "学习未开启" in browser.find_element(By.ID, "learn-state").text
    browser.save_screenshot("/tmp/labels_zh.png")
    row.find_element(By.CSS_SELECTOR, "button.primary").click()
    wait.until(lambda d: d.find_element(By.ID, "labels-status").text == "已确认。")
    vote.refresh_from_db()
    assert vote.status == LabelStatus.CONFIRMED and vote.reviewed_by == alice

    browser.get(f"{server}/kbs/{kb.pk}/hit-test/")
    browser.find_element(By.ID, "query").send_keys("年假有几天")
    browser.find_element(By.CSS_SELECTOR, "#hit-form button[type=submit]").click()
    # The first search in the server's process loads its models.
    Wait(browser, 90).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#results-table button.label-answers"))
    leave = Chunk.objects.get(kb=kb, document__source_name="leave.md")
    cell = browser.find_element(By.CSS_SELECTOR, f"#results-table tr[data-chunk-id='{leave.pk}'] .label-cell")
    assert "此段回答了这个问题" in cell.text and "不是这段" in cell.text
    cell.find_element(By.CSS_SELECTOR, "button.label-answers").click()
    wait.until(lambda d: "已标注" in cell.text)
    browser.save_screenshot("/tmp/hit_test_label_zh.png")
    label = EvalQuestion.objects.get(kb=kb, source=LabelSource.HIT_TEST)
    assert (label.text, label.chunk_ids, label.status) == ("年假有几天", [leave.pk], LabelStatus.CONFIRMED)

    browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
    browser.get(f"{server}/kbs/{kb.pk}/labels/")
    wait.until(lambda d: d.find_element(By.ID, "labels-status").text)
    assert "Review queue" in browser.find_element(By.TAG_NAME, "h1").text
    browser.find_element(By.CSS_SELECTOR, ".tab[data-status=confirmed]").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#labels-table tr[data-label-id]")) == 2)
    table = browser.find_element(By.ID, "labels-table").text
    assert "hit testing" in table and "👍 on an answer" in table and "answers it" in table and "Reject" in table
    browser.save_screenshot("/tmp/labels_en.png")
    browser.get(f"{server}/kbs/{kb.pk}/hit-test/")
    browser.find_element(By.ID, "query").send_keys("年假有几天")
    browser.find_element(By.CSS_SELECTOR, "#hit-form button[type=submit]").click()
    Wait(browser, 90).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#results-table button.label-answers"))
    assert "Answers this question" in browser.find_element(By.ID, "results-table").text
    browser.save_screenshot("/tmp/hit_test_label_en.png")
    assert csp_violations(browser) == []
