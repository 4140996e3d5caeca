"""Issue 19 items 1 and 4 on the console pages, in headless Chromium: the KB page's search box shows each search's
verdict (answered / uncertain / not found) in words and a style of its own; a chunk's Markdown table is a table
(cells built as text) in the search results and on the document page, where an editor still edits its Markdown."""
from __future__ import annotations

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

FILES = {
    "退货政策.md": "# 退货政策\n\n## 运费\n\n购买商品七天内可以无理由退货，退货运费由买家承担。质量问题导致的退货，运费由商家承担。\n",
    # Plain text keeps markup literally: the table's cells reach the page as text, never as HTML.
    "电池参数.txt": ("电池参数表\n\n| 项目 | 参数 |\n| --- | --- |\n| 充电时间 | 6至8小时 |\n| 电池容量 | 48V 20Ah |\n"
                  "| 备注 | <img src=x onerror=\"window.__xss=1\"> 以实物为准 |\n"),
}


def search(browser, query: str):
    """Search from the KB page's box; (the status line, the result boxes) once the verdict shows."""
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    box = browser.find_element(By.ID, "search-query")
    box.clear()
    box.send_keys(query)
    browser.find_element(By.ID, "search-submit").click()
    Wait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#search-status .badge.verdict"))
    return browser.find_element(By.ID, "search-status"), browser.find_elements(By.CSS_SELECTOR, "#search-results .result")


def rows_of(table):
    from selenium.webdriver.common.by import By

    return [[c.text for c in tr.find_elements(By.CSS_SELECTOR, "th, td")] for tr in table.find_elements(By.TAG_NAME, "tr")]


def test_the_search_box_shows_each_verdict_and_tables_as_tables(server, browser, alice, kb, ingest, tmp_path):
    from selenium.webdriver.common.by import By

    ingest(kb, FILES)
    open_as(browser, server, alice, f"/kbs/{kb.pk}/")
    seen = {}
    for gate, line, verdict in [(0.0, 0.0, "answered"), (0.0, 1.0, "uncertain"), (1.0, 1.0, "not_found")]:
        set_lines(kb, gate, line)
        status, results = search(browser, "电池充电时间要多久")
        badge = status.find_element(By.CSS_SELECTOR, ".badge.verdict")
        assert badge.get_attribute("data-verdict") == verdict
        assert f"verdict-{verdict}" in browser.find_element(By.ID, "search-results").get_attribute("class")
        seen[verdict] = (badge.text, badge.value_of_css_property("background-color"), status.text,
                         results[0].value_of_css_property("border-left-color"))
        if verdict == "uncertain":
            browser.save_screenshot(str(tmp_path / "kb-search-uncertain.png"))
    assert [seen[v][0] for v in ("answered", "uncertain", "not_found")] == ["已回答", "不确定", "未找到"]
    assert len({seen[v][1] for v in seen}) == 3 and seen["uncertain"][3] != seen["answered"][3]
    assert "达到确信线 0.00" in seen["answered"][2]
    assert "介于未找到门槛 0.00 与确信线 1.00 之间" in seen["uncertain"][2] and "可能不是确切答案" in seen["uncertain"][2]
    assert "低于未找到门槛 1.00" in seen["not_found"][2] and "最接近的内容" in seen["not_found"][2]

    # The table chunk: a table, the first row its header, no Markdown rule; the markup in a cell is text.
    set_lines(kb, 0.0, 0.0)
    _, results = search(browser, "电池充电时间要多久")
    result = next(r for r in results if r.find_elements(By.CSS_SELECTOR, ".text table"))
    table = result.find_element(By.CSS_SELECTOR, ".text table")
    rows = rows_of(table)
    assert rows[0] == ["项目", "参数"] and rows[1] == ["充电时间", "6至8小时"]
    assert rows[3] == ["备注", '<img src=x onerror="window.__xss=1"> 以实物为准']
    assert table.find_elements(By.CSS_SELECTOR, "tr:first-child th") and not table.find_elements(By.CSS_SELECTOR, "td th, tr + tr th")
    assert "电池参数表" in result.find_element(By.CSS_SELECTOR, ".text").text and "---" not in result.text
    assert not browser.find_elements(By.CSS_SELECTOR, "#search-results img")
    assert browser.execute_script("return window.__xss === undefined")


def test_the_document_page_shows_the_table_and_edits_its_markdown(server, browser, alice, bob, kb, ingest):
    from selenium.webdriver.common.by import By

    from knowledge.models import Chunk
    from knowledge.services.kbs import membership_set
    from tests.browser import Wait

    documents = ingest(kb, FILES)
    document = next(d for d in documents if d.source_name == "电池参数.txt")
    chunk = Chunk.objects.get(document=document, content__contains="| 项目 | 参数 |")
    membership_set(kb=kb, user=bob, role="viewer")
    # A viewer reads the table (the page's editing script is not even loaded for them).
    open_as(browser, server, bob, f"/kbs/{kb.pk}/documents/{document.pk}/")
    Wait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, f"#chunk-{chunk.pk} .text table"))
    table = browser.find_element(By.CSS_SELECTOR, f"#chunk-{chunk.pk} .text table")
    assert rows_of(table)[:2] == [["项目", "参数"], ["充电时间", "6至8小时"]]
    assert not browser.find_elements(By.CSS_SELECTOR, "#chunks img") and not browser.find_elements(By.CSS_SELECTOR, "#chunks button")

    # An editor edits the chunk's Markdown (not the cells' text), and the saved table is shown as a table again.
    open_as(browser, server, alice, f"/kbs/{kb.pk}/documents/{document.pk}/")
    article = browser.find_element(By.ID, f"chunk-{chunk.pk}")
    Wait(browser, 10).until(lambda d: article.find_elements(By.CSS_SELECTOR, ".text table"))
    article.find_element(By.CSS_SELECTOR, "button.edit").click()
    editor = article.find_element(By.CSS_SELECTOR, "textarea.chunk-editor")
    assert editor.get_attribute("value") == chunk.content
    browser.execute_script("arguments[0].value = arguments[0].value.replace('6至8小时', '7至9小时')", editor)
    article.find_element(By.CSS_SELECTOR, "button.save").click()
    Wait(browser, 20).until(lambda d: not article.find_elements(By.CSS_SELECTOR, "textarea"))
    assert rows_of(article.find_element(By.CSS_SELECTOR, ".text table"))[1] == ["充电时间", "7至9小时"]
    chunk.refresh_from_db()
    assert "| 充电时间 | 7至9小时 |" in chunk.content and "| --- | --- |" in chunk.content


def test_the_search_box_speaks_english(server, browser, alice, kb, ingest):
    from selenium.webdriver.common.by import By

    ingest(kb, FILES)
    set_lines(kb, 0.0, 1.0)
    open_as(browser, server, alice, "/static/zhiku/console.css")
    browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
    browser.get(f"{server}/kbs/{kb.pk}/")
    status, results = search(browser, "battery charging time 电池充电时间")
    assert status.find_element(By.CSS_SELECTOR, ".badge.verdict").text == "Uncertain"
    assert "is between the not-found gate 0.00 and the confidence line 1.00" in status.text
    assert any(r.find_elements(By.CSS_SELECTOR, ".text table") for r in results)
