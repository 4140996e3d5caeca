"""End to end: the hit-testing page's operating-point panel in headless Chromium (CJK font), as a KB owner."""
from __future__ import annotations

import os

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, open_as, selenium

pytestmark = [
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


def test_owner_reads_the_trade_off_and_picks_an_operating_point(server, browser, alice, kb, ingest, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from knowledge.models import KnowledgeBase
    from knowledge.services.calibration import recalibrate_kb

    ingest(kb, DOCS)
    calibration = recalibrate_kb(kb.pk)
    assert calibration is not None and calibration.status == "ready" and calibration.curve
    open_as(browser, server, alice, f"/kbs/{kb.pk}/hit-test/")
    wait = WebDriverWait(browser, 20)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#op-curve table tr"))
    panel = browser.find_element(By.ID, "operating-point").text
    assert "当前阈值 0.50" in panel and "已校准" in panel and "自动生成的问题" in panel
    rows = browser.find_elements(By.CSS_SELECTOR, "#op-curve table tr")
    assert len(rows) == 1 + len(calibration.curve)  # header + one row per threshold
    shot = os.environ.get("ZHIKU_SCREENSHOT_DIR")
    browser.save_screenshot(str((tmp_path if not shot else __import__("pathlib").Path(shot)) / "hit_test_operating_point.png"))

    # Pick the 0.40 row: the KB's threshold changes and the panel marks it as current.
    row = next(r for r in rows[1:] if r.find_elements(By.TAG_NAME, "td")[0].text.startswith("0.40"))
    row.find_element(By.TAG_NAME, "button").click()
    wait.until(lambda d: "当前阈值 0.40" in d.find_element(By.ID, "op-summary").text)
    assert KnowledgeBase.objects.get(pk=kb.pk).score_threshold == pytest.approx(0.40)
    current = [r for r in browser.find_elements(By.CSS_SELECTOR, "#op-curve table tr") if "← 当前" in r.text]
    assert len(current) == 1 and current[0].text.startswith("0.40")


def test_a_viewer_sees_the_table_without_controls(server, browser, alice, bob, kb, ingest):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from knowledge.services.kbs import membership_set

    ingest(kb, DOCS)
    membership_set(kb=kb, user=bob, role="editor")  # the page is for editors; only owners change the operating point
    open_as(browser, server, bob, f"/kbs/{kb.pk}/hit-test/")
    WebDriverWait(browser, 20).until(lambda d: "当前阈值" in d.find_element(By.ID, "op-summary").text)
    assert not browser.find_elements(By.CSS_SELECTOR, "#operating-point button")


def test_the_results_table_reads_in_words_with_room_for_the_text(server, browser, alice, kb, ingest, tmp_path):
    """Issue 9: the results table's headers were raw field paths (scores.fused_rank) and the text column
    about four characters wide."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    ingest(kb, DOCS)
    open_as(browser, server, alice, f"/kbs/{kb.pk}/hit-test/")
    browser.find_element(By.ID, "query").send_keys("退货运费谁承担")
    browser.find_element(By.CSS_SELECTOR, "#hit-form button[type=submit], #hit-form input[type=submit]").click()
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#results table tr td"))
    headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#results table tr th")]
    assert headers[:5] == ["#", "文档", "章节", "内容", "相关度"] and not any("scores." in h for h in headers)
    text_cell = browser.find_element(By.CSS_SELECTOR, "#results table td.text")
    assert "七天内可以无理由退货" in text_cell.text and text_cell.size["width"] >= 300
    assert "相关度" in browser.find_element(By.ID, "verdict").text and "threshold" not in browser.find_element(By.ID, "verdict").text
    browser.execute_script("document.getElementById('results').scrollIntoView()")
    shot = os.environ.get("ZHIKU_SCREENSHOT_DIR")
    browser.save_screenshot(str((tmp_path if not shot else __import__("pathlib").Path(shot)) / "hit_test_results.png"))
