"""Hit testing marks the passages already labelled for the question tested (issue 47 item 6), in headless Chromium,
in Chinese and English: a badge in words (not a colour only) says "answers this question" or "wrong passage", for the
same question however it is written; a button in the Label column changes the label, and a passage not labelled keeps both."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from knowledge.models import Chunk, EvalQuestion
from knowledge.services.labels import label_passage
from tests.browser import CHROMEDRIVER, CHROMIUM, Wait, csp_violations, open_as, selenium, watch_csp

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("judge_only"),
]

DOCS = {"leave.md": "# 假期\n\n员工每年享有十天带薪年假，年假可以分两次休完。\n",
        "sick.md": "# 病假\n\n员工每年享有五天带薪病假，病假需要医院证明。\n",
        "venue.md": "# 场地\n\n公司年会在杭州西湖国宾馆举办，可容纳五百人。\n"}
WORDS = {
    "zh-hans": {"answers": "已标注：此段回答了这个问题", "wrong": "已标注：不是这段", "yes": "此段回答了这个问题", "no": "不是这段",
                "short": "已标注", "short_wrong": "已标为错误"},
    "en": {"answers": "Labelled: answers this question", "wrong": "Labelled: wrong passage",
           "yes": "Answers this question", "no": "Wrong passage", "short": "Labelled", "short_wrong": "Labelled wrong"},
}


def cell(browser, chunk: Chunk):
    from selenium.webdriver.common.by import By

    return browser.find_element(By.CSS_SELECTOR, f"#results-table tr[data-chunk-id='{chunk.pk}'] .label-cell")


def mark(browser, chunk: Chunk) -> str:
    """The words above the passage's text ("" where there is no mark)."""
    from selenium.webdriver.common.by import By

    row = browser.find_element(By.CSS_SELECTOR, f"#results-table tr[data-chunk-id='{chunk.pk}']")
    return " ".join(m.text for m in row.find_elements(By.CSS_SELECTOR, "td.text .labelled-mark"))


def buttons(browser, chunk: Chunk) -> list[str]:
    from selenium.webdriver.common.by import By

    return [b.text for b in cell(browser, chunk).find_elements(By.TAG_NAME, "button")]


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_passages_labelled_for_the_question_are_marked_in_words(server, browser, alice, kb, ingest, language):
    from selenium.webdriver.common.by import By

    ingest(kb, DOCS)
    leave, sick, venue = (Chunk.objects.get(kb=kb, document__source_name=name) for name in DOCS)
    label_passage(user=alice, kb=kb, question="年假有几天？", chunk_id=leave.pk)
    label_passage(user=alice, kb=kb, question="年假有几天!", chunk_id=sick.pk, wrong=True)
    label_passage(user=alice, kb=kb, question="年会在哪里", chunk_id=venue.pk)  # another question: not marked here
    words = WORDS[language]
    watch_csp(browser)
    browser.get(server + "/static/zhiku/console.css")
    if language == "en":
        browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
    open_as(browser, server, alice, f"/kbs/{kb.pk}/hit-test/")
    browser.find_element(By.ID, "query").send_keys("年假有几天")
    browser.find_element(By.ID, "top-k").clear()
    browser.find_element(By.ID, "top-k").send_keys("5")
    browser.find_element(By.CSS_SELECTOR, "#hit-form button[type=submit]").click()
    # The first search in the server's process loads its models.
    Wait(browser, 90).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#results-table .labelled-mark")) == 2)
    shown = {int(tr.get_attribute("data-chunk-id"))
             for tr in browser.find_elements(By.CSS_SELECTOR, "#results-table tr[data-chunk-id]")}
    assert shown == {leave.pk, sick.pk, venue.pk}

    assert mark(browser, leave) == words["answers"] and buttons(browser, leave) == [words["no"]]
    assert mark(browser, sick) == words["wrong"] and buttons(browser, sick) == [words["yes"]]
    assert words["short"] in cell(browser, leave).text and words["short_wrong"] not in cell(browser, leave).text
    assert words["short_wrong"] in cell(browser, sick).text
    assert mark(browser, venue) == "" and buttons(browser, venue) == [words["yes"], words["no"]]
    badge = browser.find_element(By.CSS_SELECTOR, f"#results-table tr[data-chunk-id='{leave.pk}'] .labelled-mark")
    assert badge.get_attribute("title")
    # Read where the table starts, without scrolling the wide table sideways.
    assert browser.execute_script("const r = arguments[0].getBoundingClientRect(), box = arguments[0].closest('.scroll-x')"
                                  ".getBoundingClientRect(); return r.width > 0 && r.right <= box.right;", badge)
    folder = Path(os.environ.get("ZHIKU_SCREENSHOT_DIR") or "/tmp")
    browser.execute_script("document.getElementById('results').scrollIntoView()")
    browser.save_screenshot(str(folder / f"hit47-labelled-{language}.png"))
    browser.execute_script("document.querySelector('#results .scroll-x').scrollLeft = 10000")
    browser.save_screenshot(str(folder / f"hit47-labelled-right-{language}.png"))

    # A button in the Label column changes the label: the passage is now wrong for the question, and says so.
    cell(browser, leave).find_element(By.CSS_SELECTOR, "button.label-wrong").click()
    Wait(browser, 10).until(lambda d: mark(d, leave) == words["wrong"])
    assert buttons(browser, leave) == [words["yes"]]
    label = EvalQuestion.objects.get(kb=kb, text="年假有几天？")
    assert leave.pk in label.negative_chunk_ids and leave.pk not in label.chunk_ids
    # A passage labelled here for the first time is marked the same way.
    cell(browser, venue).find_element(By.CSS_SELECTOR, "button.label-answers").click()
    Wait(browser, 10).until(lambda d: mark(d, venue) == words["answers"])
    assert venue.pk in EvalQuestion.objects.get(pk=label.pk).chunk_ids
    browser.save_screenshot(str(folder / f"hit47-relabelled-{language}.png"))
    assert csp_violations(browser) == []
