"""End to end: the hit-testing page in headless Chromium (CJK font): the verdict and the KB's two lines stated above
the results, rows numbered as shown, a readable section column, table chunks as tables, the stage details behind a
toggle, and the calibration drawn as a chart whose two lines an owner moves."""
from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, open_as, selenium
from tests.helpers import set_lines

pytestmark = [
    pytest.mark.usefixtures("judge_only"),
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

DOCS = {
    "退货政策.md": "# 退货政策\n\n购买商品七天内可以无理由退货，退货运费由买家承担。质量问题导致的退货，运费由商家承担。\n",
    "会员积分.md": "# 会员积分\n\n会员每消费一元累积一个积分，积分有效期为十二个月，过期积分自动清零。\n",
    "发票说明.md": "# 发票说明\n\n电子发票在订单完成后自动发送到注册邮箱。如需纸质发票，请在下单时填写抬头和税号。\n",
    "配送时效.md": "# 配送时效\n\n普通快递三到五天送达，偏远地区可能延长。顺丰加急次日达，需额外支付运费二十元。\n",
}
# A section path of three headings, and a table chunked on its own.
MANUAL = {"电动车使用手册.md": (
    "# 电动车使用手册\n\n## 第三章 电池与充电\n\n### 充电注意事项\n\n"
    "请使用原装充电器充电，不要长时间连续充电超过12小时。充电时请远离易燃物品。\n\n"
    "### 电池参数\n\n| 项目 | 参数 |\n| --- | --- |\n| 充电时间 | 6至8小时 |\n| 电池容量 | 48V 20Ah |\n| 续航里程 | 80公里 |\n"
)}
def chart_x(t: float) -> float:
    """The chart's geometry (static/zhiku/calibration.js): x = L + (W - L - R) · threshold."""
    return 52 + (680 - 52 - 16) * t


def screenshot_dir(tmp_path) -> Path:
    return Path(os.environ.get("ZHIKU_SCREENSHOT_DIR") or tmp_path)


def search(browser, query: str):
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    box = browser.find_element(By.ID, "query")
    box.clear()
    box.send_keys(query)
    browser.find_element(By.CSS_SELECTOR, "#hit-form button[type=submit]").click()
    Wait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#verdict .badge.verdict"))
    return browser.find_element(By.ID, "verdict")


def test_the_results_read_in_order_with_the_verdict_and_the_details_behind_a_toggle(server, browser, alice, kb, ingest, tmp_path):
    """Issue 19 item 7: rows numbered by fusion rank (the first read #2), the section column one character a line,
    raw debug fields printed as text; the verdict and the two lines stated above the results."""
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    ingest(kb, {**DOCS, **MANUAL})
    open_as(browser, server, alice, f"/kbs/{kb.pk}/hit-test/")
    verdict = search(browser, "电池充电时间要多久")
    data = browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        fetch("/api/search/", {method: "POST", credentials: "same-origin",
          headers: {"Content-Type": "application/json", "X-CSRFToken": document.querySelector("input[name=csrfmiddlewaretoken]").value},
          body: JSON.stringify({query: "电池充电时间要多久", kb_ids: [arguments[0]], debug: true})}).then((r) => r.json()).then(done);
    """, kb.pk)
    words = {"answered": "已回答", "uncertain": "不确定", "not_found": "未找到"}[data["verdict"]]
    assert verdict.find_element(By.CSS_SELECTOR, ".badge.verdict").text == words
    assert verdict.find_element(By.ID, "verdict-text").text == (
        f"相关度 {data['relevance']:.2f}：{words}——未找到门槛 0.12，确信线 0.70")

    # Rows numbered 1, 2, … in the order shown, whatever their fusion rank; the fusion rank has its own column.
    rows = browser.find_elements(By.CSS_SELECTOR, "#results-table tr[data-chunk-id]")
    assert [r.find_element(By.CSS_SELECTOR, "td.row-number").text for r in rows] == [str(i) for i in range(1, len(rows) + 1)]
    assert [int(r.get_attribute("data-chunk-id")) for r in rows] == [r["chunk_id"] for r in data["results"]]
    headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#results-table th")]
    assert headers[:5] == ["#", "文档", "章节", "内容", "相关度"] and "融合排名" in headers

    # The section path reads as one line of words, not a column of single characters.
    row = next(r for r in rows if "充电注意事项" in r.find_element(By.CSS_SELECTOR, "td.section").text)
    section = row.find_element(By.CSS_SELECTOR, "td.section")
    assert section.text == "电动车使用手册 › 第三章 电池与充电 › 充电注意事项"
    line_height = browser.execute_script("return parseFloat(getComputedStyle(arguments[0]).lineHeight)", section)
    assert section.size["width"] >= 130 and section.size["height"] <= 4 * line_height

    # The table chunk is a table in the text column: a header row, its rows, no Markdown rule.
    table_row = next(r for r in rows if r.find_elements(By.CSS_SELECTOR, "td.text table"))
    table = table_row.find_element(By.CSS_SELECTOR, "td.text table")
    cells = [[c.text for c in tr.find_elements(By.CSS_SELECTOR, "th, td")] for tr in table.find_elements(By.TAG_NAME, "tr")]
    assert cells[0] == ["项目", "参数"] and ["充电时间", "6至8小时"] in cells[1:]
    assert table.find_elements(By.CSS_SELECTOR, "tr:first-child th") and "---" not in table_row.text

    # The stage details are behind a toggle: closed at first, then tables with headings in words.
    stages = browser.find_element(By.ID, "stages")
    assert stages.tag_name == "details" and stages.get_attribute("open") is None
    assert not browser.find_element(By.ID, "stages-body").is_displayed()
    browser.execute_script("arguments[0].scrollIntoView()", verdict)
    browser.save_screenshot(str(screenshot_dir(tmp_path) / "hit-test-results.png"))
    stages.find_element(By.TAG_NAME, "summary").click()
    Wait(browser, 5).until(lambda d: d.find_element(By.ID, "stages-body").is_displayed())
    body = browser.find_element(By.ID, "stages-body")
    headings = [h.text for h in body.find_elements(By.CSS_SELECTOR, "h3, h4")]
    assert {"向量检索", "关键词检索", "融合后的候选", "相关度判定", "最终结果"} <= set(headings)
    assert body.find_elements(By.CSS_SELECTOR, "table.stage-table th") and "{" not in body.text  # no JSON printed
    final = next(h for h in body.find_elements(By.CSS_SELECTOR, "h3") if h.text == "最终结果")
    final_table = final.find_element(By.XPATH, "following-sibling::div[1]//table")
    first = final_table.find_elements(By.TAG_NAME, "tr")[1]
    assert first.find_elements(By.TAG_NAME, "td")[0].text == "1"  # each final result's number in the list shown
    browser.execute_script("arguments[0].scrollIntoView()", stages)
    browser.save_screenshot(str(tmp_path / "hit-test-stages.png"))


def test_each_outcome_has_its_own_badge_and_sentence(server, browser, alice, kb, ingest):
    from selenium.webdriver.common.by import By

    ingest(kb, DOCS)
    open_as(browser, server, alice, f"/kbs/{kb.pk}/hit-test/")
    seen = {}
    for gate, line, verdict in [(0.0, 0.0, "answered"), (0.0, 1.0, "uncertain"), (1.0, 1.0, "not_found")]:
        set_lines(kb, gate, line)
        box = search(browser, "退货运费谁承担")
        badge = box.find_element(By.CSS_SELECTOR, ".badge.verdict")
        assert badge.get_attribute("data-verdict") == verdict and f"verdict-{verdict}" in box.get_attribute("class")
        seen[verdict] = (badge.text, badge.value_of_css_property("background-color"), box.text)
    assert [seen[v][0] for v in ("answered", "uncertain", "not_found")] == ["已回答", "不确定", "未找到"]
    assert len({seen[v][1] for v in seen}) == 3  # a colour per outcome
    assert "确信线 0.00" in seen["answered"][2] and "依据这些段落直接回答" in seen["answered"][2]
    assert "介于两条线之间" in seen["uncertain"][2]
    assert "低于未找到门槛" in seen["not_found"][2] and kb.not_found_text in seen["not_found"][2]


def test_the_owner_reads_the_chart_and_moves_both_lines(server, browser, alice, kb, ingest, tmp_path):
    from selenium.webdriver.common.by import By

    from knowledge.models import KnowledgeBase
    from knowledge.services.calibration import recalibrate_kb
    from tests.browser import Wait

    ingest(kb, DOCS)
    calibration = recalibrate_kb(kb.pk)
    assert calibration is not None and calibration.status == "ready" and calibration.curve
    open_as(browser, server, alice, f"/kbs/{kb.pk}/hit-test/")
    wait = Wait(browser, 20)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#op-chart svg g[data-line]"))
    summary = browser.find_element(By.ID, "op-summary").text
    assert "未找到门槛 0.12 · 确信线 0.70" in summary and "已校准" in summary and "自动生成的问题" in summary

    # The chart: three curves over the calibration's thresholds, the two lines where the KB has them.
    chart = browser.find_element(By.CSS_SELECTOR, "#op-chart svg")
    for series in ("answerable_kept", "unanswerable_rejected", "unanswerable_answered"):
        points = chart.find_element(By.CSS_SELECTOR, f'polyline[data-series="{series}"]').get_attribute("points").split()
        assert len(points) == len(calibration.curve)
    kept = {p["threshold"]: p["answerable_kept"] for p in calibration.curve}
    first = chart.find_element(By.CSS_SELECTOR, 'polyline[data-series="answerable_kept"]').get_attribute("points").split()[0]
    assert float(first.split(",")[0]) == pytest.approx(chart_x(min(kept)), abs=0.1)
    assert float(first.split(",")[1]) == pytest.approx(40 + (310 - 40 - 44) * (1 - kept[min(kept)]), abs=0.1)

    def line_x(name):
        return float(chart.find_element(By.CSS_SELECTOR, f'g[data-line="{name}"] line').get_attribute("x1"))

    assert line_x("gate") == pytest.approx(chart_x(0.12), abs=0.01)
    assert line_x("confidence") == pytest.approx(chart_x(0.70), abs=0.01)
    assert chart.find_element(By.CSS_SELECTOR, 'g[data-line="gate"] text').text == "未找到门槛 0.12"
    assert chart.find_element(By.CSS_SELECTOR, 'g[data-line="confidence"] text').text == "确信线 0.70"
    assert {z.get_attribute("data-zone") for z in chart.find_elements(By.CSS_SELECTOR, "rect[data-zone]")} == \
        {"not_found", "uncertain", "answered"}
    legend = browser.find_element(By.CSS_SELECTOR, "#op-chart .chart-legend").text
    assert "可回答问题保留" in legend and "不可回答问题被拒" in legend and "不可回答问题被回答" in legend

    # The outcomes at the two lines, in words: the calibration's own shares.
    outcomes = calibration_outcomes(kb)
    row = browser.find_element(By.CSS_SELECTOR, '#op-outcomes tr[data-kind="answerable"]')
    shares = outcomes["answerable"]
    assert row.text.startswith("可回答的问题") and f"已回答 {js_round(100 * shares['answered'])}%" in row.text
    assert f"未找到 {js_round(100 * shares['not_found'])}%" in row.text
    browser.find_element(By.ID, "op-table").find_element(By.TAG_NAME, "summary").click()
    assert len(browser.find_elements(By.CSS_SELECTOR, "#op-curve table tr")) == 1 + len(calibration.curve)
    browser.find_element(By.ID, "op-table").find_element(By.TAG_NAME, "summary").click()
    browser.set_window_size(1280, 1500)  # the whole panel in the window, for its screenshot
    browser.find_element(By.ID, "operating-point").screenshot(str(screenshot_dir(tmp_path) / "hit-test-chart.png"))

    browser.set_window_size(1280, 900)

    # Move both lines: saved through the API, the chart redrawn where they now are.
    for field, value in (("op-gate", "0.2"), ("op-line", "0.6")):
        browser.find_element(By.ID, field).clear()
        browser.find_element(By.ID, field).send_keys(value)
    browser.find_element(By.ID, "op-save").click()
    wait.until(lambda d: "未找到门槛 0.20 · 确信线 0.60" in d.find_element(By.ID, "op-summary").text)
    kb = KnowledgeBase.objects.get(pk=kb.pk)
    assert (kb.score_threshold, kb.answer_threshold) == (pytest.approx(0.2), pytest.approx(0.6))
    chart = browser.find_element(By.CSS_SELECTOR, "#op-chart svg")
    assert line_x("gate") == pytest.approx(chart_x(0.2), abs=0.01) and line_x("confidence") == pytest.approx(chart_x(0.6), abs=0.01)
    assert browser.find_element(By.ID, "op-status").text == "已保存。"

    # A gate above the line is refused in words, and nothing changes.
    browser.find_element(By.ID, "op-gate").clear()
    browser.find_element(By.ID, "op-gate").send_keys("0.8")
    browser.find_element(By.ID, "op-save").click()
    wait.until(lambda d: "保存失败" in d.find_element(By.ID, "op-status").text)
    assert "确信线" in browser.find_element(By.ID, "op-status").text
    assert KnowledgeBase.objects.get(pk=kb.pk).score_threshold == pytest.approx(0.2)


def js_round(x: float) -> int:
    """Math.round: halves go up (Python's round goes to even)."""
    return math.floor(x + 0.5)


def calibration_outcomes(kb):
    from knowledge.models import KnowledgeBase
    from knowledge.services.calibration_results import calibration_payload

    return calibration_payload(KnowledgeBase.objects.get(pk=kb.pk))["outcomes"]


def test_an_editor_reads_the_page_in_english_without_controls(server, browser, alice, bob, kb, ingest):
    """English (the language switch's cookie); an editor who is no owner reads the chart and cannot move the lines."""
    from selenium.webdriver.common.by import By

    from knowledge.services.calibration import recalibrate_kb
    from knowledge.services.kbs import membership_set
    from tests.browser import Wait

    ingest(kb, {**DOCS, **MANUAL})
    recalibrate_kb(kb.pk)
    membership_set(kb=kb, user=bob, role="editor")  # the page is for editors; only owners move the lines
    open_as(browser, server, bob, "/static/zhiku/console.css")
    browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
    browser.get(f"{server}/kbs/{kb.pk}/hit-test/")
    Wait(browser, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#op-chart svg g[data-line]"))
    assert "Not-found gate 0.12 · confidence line 0.70" in browser.find_element(By.ID, "op-summary").text
    chart = browser.find_element(By.CSS_SELECTOR, "#op-chart svg")
    assert chart.find_element(By.CSS_SELECTOR, 'g[data-line="gate"] text').text == "not-found gate 0.12"
    assert chart.find_element(By.CSS_SELECTOR, 'g[data-line="confidence"] text').text == "confidence line 0.70"
    assert not browser.find_elements(By.ID, "op-lines")
    assert not browser.find_elements(By.CSS_SELECTOR, "#operating-point button")
    assert "Only the knowledge base's owners can move the lines." in browser.find_element(By.ID, "op-actions").text

    verdict = search(browser, "电池充电时间要多久")
    text = verdict.find_element(By.ID, "verdict-text").text
    assert text.startswith("relevance ") and text.endswith("— not-found gate 0.12, confidence line 0.70")
    assert verdict.find_element(By.CSS_SELECTOR, ".badge.verdict").text in {"Answered", "Uncertain", "Not found"}
    headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#results-table th")]
    assert headers[:5] == ["#", "Document", "Section", "Text", "Relevance"]
    assert browser.find_elements(By.CSS_SELECTOR, "#results-table td.text table")
    assert browser.find_element(By.CSS_SELECTOR, "#stages summary").text.startswith("Stage details")
    page = browser.find_element(By.TAG_NAME, "main").text
    assert "相关度" not in page and "未找到门槛" not in page and "确信线" not in page
