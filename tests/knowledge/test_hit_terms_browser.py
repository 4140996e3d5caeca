"""Issue 38 item 6: the hit-testing page names its stages, the judge's signals and the reranker in words, in both
languages, each with a line saying what it is (a tooltip, and the page's glossary)."""
from __future__ import annotations

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, open_as, selenium

pytestmark = [
    pytest.mark.usefixtures("judge_only"),
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

DOCS = {"退货政策.md": "# 退货政策\n\n购买商品七天内可以无理由退货，退货运费由买家承担。\n",
        "配送时效.md": "# 配送时效\n\n普通快递三到五天送达，偏远地区可能延长。\n"}


def _search(browser, query: str):
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    rerank = browser.find_element(By.ID, "rerank")
    if not rerank.is_selected():
        rerank.click()
    browser.find_element(By.ID, "query").send_keys(query)
    browser.find_element(By.CSS_SELECTOR, "#hit-form button[type=submit]").click()
    Wait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#timings span[data-stage]"))
    browser.find_element(By.CSS_SELECTOR, "#stages summary").click()


def _page(browser) -> dict:
    from selenium.webdriver.common.by import By

    stages = {s.get_attribute("data-stage"): (s.text, s.get_attribute("title"))
              for s in browser.find_elements(By.CSS_SELECTOR, "#timings span[data-stage]")}
    headers = {th.text: th.get_attribute("title") for th in browser.find_elements(By.CSS_SELECTOR, "#stages-body th")}
    run = browser.find_element(By.ID, "run-line")
    terms = {dt.get_attribute("data-term"): dt.get_attribute("textContent")
             for dt in browser.find_elements(By.CSS_SELECTOR, "#glossary-list dt[data-term]")}
    return {"stages": stages, "headers": headers, "run": run.text, "run_title": run.get_attribute("title"),
            "reranker_help": browser.find_element(By.ID, "reranker-help").text, "terms": terms}


def test_stages_signals_and_reranker_read_in_words_with_their_meaning(server, browser, alice, kb, ingest):
    from selenium.webdriver.common.by import By

    ingest(kb, DOCS)
    open_as(browser, server, alice, f"/kbs/{kb.pk}/hit-test/")
    _search(browser, "退货运费谁承担")
    zh = _page(browser)
    assert zh["stages"]["analyze"][0].startswith("分析问题 ") and "切分成词" in zh["stages"]["analyze"][1]
    assert zh["stages"]["judge"][0].startswith("相关度判定 ") and zh["stages"]["total"][0].startswith("总计 ")
    assert all(title for _, title in zh["stages"].values())  # every stage explained
    assert "覆盖度" in zh["headers"] and "比例" in zh["headers"]["覆盖度"]
    assert "余弦（相对背景）" in zh["headers"] and "标准差" in zh["headers"]["余弦（相对背景）"]
    assert "coverage" not in zh["headers"] and "cosine_z" not in zh["headers"]
    assert zh["run"].startswith("模式 混合 · 重排 余弦（无重排模型）") and "cosine-fallback" not in zh["run"]
    assert "没有加载重排模型" in zh["reranker_help"] and "两条路径" in zh["run_title"]
    assert zh["terms"]["cosine_z"] == "余弦（相对背景） cosine_z" and zh["terms"]["analyze"] == "分析问题 analyze"
    glossary = browser.find_element(By.ID, "glossary")
    assert glossary.find_element(By.TAG_NAME, "summary").text == "各阶段与判定信号的含义"

    browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
    browser.get(f"{server}/kbs/{kb.pk}/hit-test/")
    _search(browser, "who pays for return shipping")
    en = _page(browser)
    assert en["stages"]["analyze"][0].startswith("Analyse the question ") and "cut into words" in en["stages"]["analyze"][1]
    assert "Coverage" in en["headers"] and "Cosine above background" in en["headers"]
    assert en["run"].startswith("mode hybrid · reranker cosine (no reranking model)")
    assert en["reranker_help"].startswith("No reranking model is loaded")
    assert en["terms"]["cosine_z"] == "Cosine above background cosine_z"
    assert "分析" not in browser.find_element(By.TAG_NAME, "main").text
