"""End to end in headless Chromium, in Chinese and in English: add a source on the KB page, run it, read its runs."""
from __future__ import annotations

import json

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, daphne, selenium
from tests.sources.console_flow import open_kb_page, open_source_form, shot

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

ITEMS = {"return": ["退货政策.md", "# 退货政策\n\n购买七天内可以无理由退货，运费由买家承担。"],
         "points": ["会员积分.md", "# 会员积分\n\n每消费一元累积一个积分，积分有效期十二个月。"]}
WORDS = {"zh-hans": {"sources": "数据源", "run": "立即运行", "added": "新增", "succeeded": "成功"},
         "en": {"sources": "Sources", "run": "Run now", "added": "added", "succeeded": "succeeded"}}


@pytest.fixture
def sites(tmp_path):
    folder = tmp_path / "sites"
    folder.mkdir()
    (folder / "handbook.json").write_text(json.dumps(ITEMS, ensure_ascii=False))
    return folder


@pytest.fixture
def source_server(tmp_path, sites):
    """daphne with the memory kind registered (tests/sources/memory_kind.py), reading its sites from ``sites``."""
    with daphne(tmp_path / "daphne.log", ZHIKU_SOURCE_KIND_MODULES="tests.sources.memory_kind",
                MEMTEST_SITES_DIR=str(sites)) as url:
        yield url


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_an_editor_adds_a_source_runs_it_and_reads_its_runs(source_server, browser, alice, kb, tmp_path, language,
                                                            monkeypatch, sites):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from knowledge.models import Document, DocumentStatus
    from tests.browser import Wait

    monkeypatch.setenv("MEMTEST_SITES_DIR", str(sites))  # this process checks the settings too (the same module)
    words = WORDS[language]
    open_kb_page(browser, source_server, alice, kb, language)
    open_source_form(browser)
    section = browser.find_element(By.ID, "sources")
    assert section.find_element(By.TAG_NAME, "h2").text == words["sources"]
    Select(browser.find_element(By.ID, "add-kind")).select_by_value("memtest")
    browser.find_element(By.ID, "add-name").send_keys("员工手册" if language == "zh-hans" else "Handbook")
    browser.find_element(By.ID, "add-memtest-site").send_keys("handbook")
    browser.find_element(By.ID, "add-memtest-secret-token").send_keys("not-shown-again")
    browser.execute_script("document.getElementById('sources').scrollIntoView()")
    shot(browser, tmp_path, f"sources-add-{language}.png")
    browser.find_element(By.ID, "source-add-submit").click()
    Wait(browser, 20).until(lambda d: d.find_elements(By.ID, "source-page"))
    assert "not-shown-again" not in browser.page_source

    run_button = next(b for b in browser.find_elements(By.CSS_SELECTOR, "button[data-action=run]") if b.is_displayed())
    assert run_button.text == words["run"]
    run_button.click()
    Wait(browser, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#run-table .run-row"))
    row = browser.find_element(By.CSS_SELECTOR, "#run-table .run-row")
    assert words["succeeded"] in row.text
    assert [c.text for c in row.find_elements(By.CSS_SELECTOR, "td.num")] == ["2", "0", "0", "0", "0"]
    assert words["added"] in browser.find_element(By.CSS_SELECTOR, "#run-table thead").text
    assert Document.objects.filter(kb=kb, status=DocumentStatus.READY).count() == 2

    browser.find_element(By.CSS_SELECTOR, "#sources details.card summary").click()
    name = browser.find_element(By.ID, "edit-name")
    name.clear()
    name.send_keys("Renamed")
    Select(browser.find_element(By.ID, "edit-schedule")).select_by_value("cron")
    browser.find_element(By.ID, "edit-cron").send_keys("0 3 * * *")
    shot(browser, tmp_path, f"sources-edit-{language}.png")
    browser.find_element(By.CSS_SELECTOR, "#source-edit-form button[type=submit]").click()
    Wait(browser, 20).until(lambda d: d.find_element(By.TAG_NAME, "h1").text == "Renamed")
    from sources.models import Source

    edited = Source.objects.get(kb=kb)
    assert (edited.schedule, edited.cron, edited.settings, edited.credential_names) == ("cron", "0 3 * * *",
                                                                                       {"site": "handbook"}, ["token"])
    shot(browser, tmp_path, f"sources-source-{language}.png")

    browser.get(source_server + f"/kbs/{kb.pk}/")
    table = Wait(browser, 20).until(lambda d: d.find_element(By.ID, "source-table"))
    assert "+2 ~0 =0 −0 ✗0" in table.text
    Wait(browser, 20).until(lambda d: "memory.example" in d.find_element(By.ID, "doc-rows").text)
    shot(browser, tmp_path, f"sources-kb-{language}.png")
