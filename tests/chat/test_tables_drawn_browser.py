"""Tables drawn wherever a passage or an answer is shown in the console (issue 47 item 4), in headless Chromium, in
Chinese and English: the health page's best passages and its label dialog, the evaluation page's answer column and
the labelled questions' passages draw a spec sheet's GFM table as a <table> (static/zhiku/richtext.js), not as pipes."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from chat_helpers import connect, receive_until_end

from knowledge.models import EvalQuestion, KnowledgeBase
from tests.assistants.test_answer_tables import QUESTION, SPECS
from tests.browser import CHROMEDRIVER, CHROMIUM, Wait, csp_violations, open_as, selenium, watch_csp

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("judge_only"),  # no reader: the verdicts are the judge's, and the KB's lines make them uncertain
]

HEADER = ["参数", "XK-300", "XK-500"]


def shot(browser, tmp_path, name: str) -> None:
    browser.save_screenshot(str(Path(os.environ.get("ZHIKU_SCREENSHOT_DIR") or tmp_path) / name))


def tables_in(element) -> list[list[list[str]]]:
    """Each <table> under ``element`` as its rows of cell texts (the header row first)."""
    from selenium.webdriver.common.by import By

    return [[[cell.text for cell in row.find_elements(By.CSS_SELECTOR, "th, td")] for row in table.find_elements(By.TAG_NAME, "tr")]
            for table in element.find_elements(By.CSS_SELECTOR, "table.rich-table, .table-box table")]


def assert_drawn(element) -> None:
    """``element`` shows the spec sheet's table as a table, its header first, and no Markdown pipes or rule."""
    tables = tables_in(element)
    assert tables and all(table[0] == HEADER for table in tables), element.get_attribute("innerHTML")
    assert "| --- |" not in element.text and "| 参数 |" not in element.text


async def ask(token: str, kb_ids: list[int], question: str) -> dict:
    """The question asked on the chat websocket; its finish event (a first turn loads the models: a long wait)."""
    communicator, connected = await connect(f"/ws/chat/?token={token}")
    assert connected
    await communicator.send_json_to({"type": "ask", "conversation": None, "kb_ids": kb_ids, "question": question})
    events = await receive_until_end(communicator, timeout=120)
    await communicator.disconnect()
    assert events[-1]["type"] == "finish", events[-1]
    return events[-1]


@pytest.fixture
def specs_kb(make_kb, ingest, alice, alice_token):
    """The spec sheet, every question uncertain (gate 0, line 1), asked once in chat."""
    kb = make_kb(alice, "车型参数")
    ingest(kb, {"xk.md": SPECS})
    KnowledgeBase.objects.filter(pk=kb.pk).update(score_threshold=0.0, answer_threshold=1.0)
    assert async_to_sync(ask)(alice_token, [kb.pk], QUESTION)["verdict"] == "uncertain"
    return kb


def test_the_health_page_and_its_dialog_draw_a_passage_s_table(server, browser, specs_kb, alice, tmp_path):
    from selenium.webdriver.common.by import By

    kb = specs_kb
    watch_csp(browser)
    for language in ("zh-hans", "en"):
        if language == "en":
            browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
            browser.get(f"{server}/kbs/{kb.pk}/health/")
        else:
            open_as(browser, server, alice, f"/kbs/{kb.pk}/health/")
        Wait(browser, 90).until(lambda d: d.find_element(By.ID, "health-page").get_attribute("data-loaded") == "1")
        failing = browser.find_element(By.ID, "health-failing")
        assert QUESTION in failing.text
        assert_drawn(failing)
        assert_drawn(browser.find_element(By.ID, "health-most"))
        shot(browser, tmp_path, f"tables_health_{language}.png")

        failing.find_element(By.CSS_SELECTOR, "button.health-label").click()
        Wait(browser, 10).until(lambda d: d.find_element(By.ID, "health-dialog").is_displayed())
        assert_drawn(browser.find_element(By.ID, "health-dialog-body"))
        shot(browser, tmp_path, f"tables_health_dialog_{language}.png")
        browser.find_element(By.ID, "health-dialog-cancel").click()
    assert csp_violations(browser) == []


def test_the_evaluation_page_draws_an_answer_s_table(server, browser, specs_kb, alice, tmp_path):
    from selenium.webdriver.common.by import By

    kb = specs_kb
    EvalQuestion.objects.create(kb=kb, text=QUESTION, relevant=["xk.md"], answers=["6小时"])
    open_as(browser, server, alice, f"/kbs/{kb.pk}/evaluation/")
    wait = Wait(browser, 120)
    for language, count in (("zh-hans", "共 1 个问题"), ("en", "1 questions")):
        if language == "en":
            browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
            browser.refresh()
        wait.until(lambda d, c=count: c in d.find_element(By.ID, "q-count").text)
        browser.find_element(By.ID, "run-answers").click()
        browser.find_element(By.ID, "run-submit").click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#answers-per-question tr[data-question-id]"))
        answer = browser.find_element(By.CSS_SELECTOR, "#answers-per-question tr[data-question-id] td.answer")
        assert_drawn(answer)
        assert any(row[0] == "充电时间" for row in tables_in(answer)[0][1:])  # the row asked about
        browser.execute_script("document.getElementById('answers-per-question').scrollIntoView({block: 'center'})")
        shot(browser, tmp_path, f"tables_evaluation_{language}.png")


def test_the_labelled_questions_draw_a_passage_s_table(server, browser, specs_kb, alice, tmp_path):
    from selenium.webdriver.common.by import By

    from knowledge.models import Chunk
    from knowledge.services.labels import label_passage

    kb = specs_kb
    chunk = Chunk.objects.filter(kb=kb, content__contains="| 参数 |").first()
    label_passage(user=alice, kb=kb, question=QUESTION, chunk_id=chunk.pk)  # an editor's label: confirmed at once
    open_as(browser, server, alice, f"/kbs/{kb.pk}/labels/")
    browser.find_element(By.CSS_SELECTOR, '.tab[data-status="confirmed"]').click()
    Wait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".label-passage"))
    assert_drawn(browser.find_element(By.CSS_SELECTOR, ".label-passage"))
    shot(browser, tmp_path, "tables_labels_zh.png")
