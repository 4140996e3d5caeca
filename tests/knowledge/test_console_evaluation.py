"""Issue 9: the console's evaluation page: labelled questions added, listed and deleted, and a run's
metrics, for editors; in headless Chromium (CJK font) and through the Django client."""
from __future__ import annotations

import os

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, open_as, selenium

DOCS = {
    "退货政策.md": "# 退货政策\n\n购买商品七天内可以无理由退货，退货运费由买家承担。质量问题导致的退货，运费由商家承担。\n",
    "会员积分.md": "# 会员积分\n\n会员每消费一元累积一个积分，积分有效期为十二个月，过期积分自动清零。\n",
}


@pytest.mark.django_db
@pytest.mark.parametrize(("role", "status"), [("editor", 200), ("viewer", 403), (None, 404)])
def test_the_page_is_for_editors(role, status, kb, bob, client):
    from knowledge.services.kbs import membership_set

    if role:
        membership_set(kb=kb, user=bob, role=role)
    client.force_login(bob)
    assert client.get(f"/kbs/{kb.pk}/evaluation/", HTTP_ACCEPT_LANGUAGE="zh-hans").status_code == status


@pytest.mark.django_db
def test_the_page_speaks_both_languages_and_the_kb_page_links_it(kb, alice, client):
    client.force_login(alice)
    chinese = client.get(f"/kbs/{kb.pk}/evaluation/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    english = client.get(f"/kbs/{kb.pk}/evaluation/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "添加标注问题" in chinese and "运行评测" in chinese
    assert "Add a labelled question" in english and "Run the evaluation" in english
    assert f"/kbs/{kb.pk}/evaluation/" in client.get(f"/kbs/{kb.pk}/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()


@pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER and selenium), reason="needs chromium, chromium-driver and selenium")
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("judge_only")
def test_an_editor_labels_questions_and_runs_the_evaluation(server, browser, alice, kb, ingest):
    from selenium.webdriver.common.by import By

    from knowledge.models import EvalQuestion, KnowledgeBase
    from tests.browser import Wait

    ingest(kb, DOCS)
    KnowledgeBase.objects.filter(pk=kb.pk).update(score_threshold=0.0, answer_threshold=1.0)
    open_as(browser, server, alice, f"/kbs/{kb.pk}/evaluation/")
    wait = Wait(browser, 30)
    wait.until(lambda d: "还没有标注问题" in d.find_element(By.ID, "questions").text)

    for text, relevant in [("退货运费谁承担？", "退货政策.md"), ("积分多久过期？", "会员积分.md"), ("发票怎么开？", "")]:
        browser.find_element(By.ID, "q-text").send_keys(text)
        browser.find_element(By.ID, "q-relevant").send_keys(relevant)
        browser.find_element(By.ID, "q-add").click()
        wait.until(lambda d, t=text: t in d.find_element(By.ID, "questions").text)
    assert "应回答未找到" in browser.find_element(By.ID, "questions").text
    stored = sorted(EvalQuestion.objects.filter(kb=kb).values_list("text", flat=True))
    assert stored == ["发票怎么开？", "积分多久过期？", "退货运费谁承担？"]

    browser.find_element(By.ID, "run-submit").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#metrics-table tr td"))
    rows = {r.find_elements(By.TAG_NAME, "td")[0].text: r.find_elements(By.TAG_NAME, "td")[1].text
            for r in browser.find_elements(By.CSS_SELECTOR, "#metrics-table tr") if r.find_elements(By.TAG_NAME, "td")}
    assert rows["问题数"] == "3" and rows["正确文档排第一（recall@1）"] == "1.000"
    # The three outcomes of each kind of question, in words and a bar (the KB's lines give every question one:
    # gate 0 and line 1 make every search uncertain).
    for kind, words in (("answerable", "可回答（2 个问题）"), ("unanswerable", "不可回答（1 个问题）")):
        row = browser.find_element(By.CSS_SELECTOR, f'#search-verdicts tr[data-kind="{kind}"]')
        assert row.text.startswith(words) and "已回答 0% · 不确定 100% · 未找到 0%" in row.text
        bar = row.find_element(By.CSS_SELECTOR, ".outcome-bar")
        parts = [p.size["width"] for p in bar.find_elements(By.TAG_NAME, "span")]
        assert parts[0] == parts[2] == 0 and parts[1] == pytest.approx(bar.size["width"] - 2, abs=1)  # inside its border
    if shot := os.environ.get("ZHIKU_SCREENSHOT_DIR"):
        browser.execute_script("document.getElementById('run-form').scrollIntoView()")  # the run and its figures
        browser.save_screenshot(os.path.join(shot, "console-evaluation.png"))

    browser.find_elements(By.CSS_SELECTOR, "#questions button")[0].click()  # delete the first
    wait.until(lambda d: "共 2 个问题" in d.find_element(By.ID, "q-count").text)
    assert EvalQuestion.objects.filter(kb=kb).count() == 2


@pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER and selenium), reason="needs chromium, chromium-driver and selenium")
@pytest.mark.django_db(transaction=True)
def test_a_run_with_answers_shows_the_answer_metrics_in_words(server, browser, alice, kb, ingest, tmp_path):
    """The page asks for answers: true and shows answer_contains, citation precision and the not-found rates."""
    from selenium.webdriver.common.by import By

    from knowledge.models import EvalQuestion
    from tests.browser import Wait

    ingest(kb, DOCS)
    spans = EvalQuestion.objects.create(kb=kb, text="退货运费谁承担？", relevant=["退货政策.md"], answers=["买家承担"])
    EvalQuestion.objects.create(kb=kb, text="积分多久过期？", relevant=["会员积分.md"], answers=["外星人"])  # never in an answer
    EvalQuestion.objects.create(kb=kb, text="公司的股票代码是多少？", relevant=[])
    open_as(browser, server, alice, f"/kbs/{kb.pk}/evaluation/")
    wait = Wait(browser, 120)
    wait.until(lambda d: "共 3 个问题" in d.find_element(By.ID, "q-count").text)
    browser.find_element(By.ID, "run-answers").click()
    browser.find_element(By.ID, "run-submit").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#answers-table tr"))

    figures = {r.get_attribute("data-key"): r.find_elements(By.TAG_NAME, "td")[1].text
               for r in browser.find_elements(By.CSS_SELECTOR, "#answers-table tr")}
    labels = browser.find_element(By.ID, "answers-table").text
    assert figures["questions"] == "3" and figures["with_answers"] == "2"
    assert "回答前 200 字中包含预期答案片段" in labels and "引用的段落中包含预期答案片段的比例" in labels
    per_question = {r.find_elements(By.TAG_NAME, "td")[0].text: r.find_elements(By.TAG_NAME, "td")[1].text
                    for r in browser.find_elements(By.CSS_SELECTOR, "#answers-per-question tr[data-question-id]")}
    assert set(per_question) == {"退货运费谁承担？", "积分多久过期？", "公司的股票代码是多少？"}
    assert per_question["积分多久过期？"] == "否" and per_question["公司的股票代码是多少？"] == "—"  # no spans to hold
    # Each question's verdict as a badge, and the answers' three outcomes agree with them.
    badges = {r.find_elements(By.TAG_NAME, "td")[0].text: r.find_element(By.CSS_SELECTOR, ".badge.verdict").get_attribute("data-verdict")
              for r in browser.find_elements(By.CSS_SELECTOR, "#answers-per-question tr[data-question-id]")}
    assert set(badges.values()) <= {"answered", "uncertain", "not_found"}
    answerable = [badges["退货运费谁承担？"], badges["积分多久过期？"]]
    words = {"answered": "已回答", "uncertain": "不确定", "not_found": "未找到"}
    row = browser.find_element(By.CSS_SELECTOR, '#answer-verdicts tr[data-kind="answerable"]').text
    for verdict, label in words.items():
        assert f"{label} {round(100 * answerable.count(verdict) / 2)}%" in row
    row = browser.find_element(By.CSS_SELECTOR, '#answer-verdicts tr[data-kind="unanswerable"]').text
    assert f"{words[badges['公司的股票代码是多少？']]} 100%" in row
    # The figures agree with each question's line: the share of span questions whose answer holds one.
    held = per_question["退货运费谁承担？"] == "是"
    assert figures["answer_contains"] == ("50%" if held else "0%")
    summary = browser.find_element(By.ID, "answers-summary").text
    assert summary.startswith("带答案片段的可回答问题中，") and "回答了“未找到”" in summary
    assert spans.pk  # the questions were read, not changed
    if os.environ.get("ZHIKU_SCREENSHOT_DIR"):
        browser.execute_script("document.getElementById('answer-metrics').scrollIntoView()")
        from tests.knowledge.test_console_browser import shot as full_shot

        full_shot(browser, tmp_path, "console-evaluation-answers.png")
