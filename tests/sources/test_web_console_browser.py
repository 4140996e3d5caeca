"""The web kind in the console, in headless Chromium, in Chinese and in English: its form (start URL, page limit,
path patterns, delay), a run against a site on loopback, the run's counts and the pages listed as documents."""
from __future__ import annotations

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, selenium
from tests.sources.console_flow import open_kb_page, open_source_form, run_and_count, run_button, shot
from tests.sources.web_fixtures import build_site
from tests.sources.web_server import Site

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

WORDS = {"zh-hans": {"url": "起始页或站点地图", "pages": "页面上限", "succeeded": "成功"},
         "en": {"url": "Start page or sitemap", "pages": "Page limit", "succeeded": "succeeded"}}


@pytest.fixture
def site():
    with Site() as running:
        build_site(running)
        yield running


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_an_editor_connects_a_web_site(sources_console, site, browser, alice, kb, tmp_path, language):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from knowledge.models import Document, DocumentStatus
    from sources.models import Source
    from tests.browser import Wait

    words = WORDS[language]
    open_kb_page(browser, sources_console, alice, kb, language)
    open_source_form(browser)
    Select(browser.find_element(By.ID, "add-kind")).select_by_value("web")
    browser.find_element(By.ID, "add-name").send_keys("产品文档站" if language == "zh-hans" else "Docs site")
    form = browser.find_element(By.ID, "sources")
    assert words["url"] in form.text and words["pages"] in form.text
    browser.find_element(By.ID, "add-web-url").send_keys(site.url("/"))
    delay = browser.find_element(By.ID, "add-web-delay_s")
    delay.clear()
    delay.send_keys("0")
    browser.find_element(By.ID, "add-web-exclude").send_keys("/files/*\n/broken")
    browser.execute_script("document.getElementById('sources').scrollIntoView()")
    shot(browser, tmp_path, f"web-add-{language}.png")
    browser.find_element(By.ID, "source-add-submit").click()
    Wait(browser, 20).until(lambda d: d.find_elements(By.ID, "source-page"))
    source = Source.objects.get(kb=kb)
    assert source.settings["exclude"] == ["/files/*", "/broken"] and source.settings["delay_s"] == 0

    # /, /guide/install, /guide/config.html, /deep, /zh/policy, /old: six pages; no files, no broken page
    assert run_and_count(browser, run_button(browser), words["succeeded"], timeout=90) == ["6", "0", "0", "0", "0"]
    shot(browser, tmp_path, f"web-source-{language}.png")
    names = set(Document.objects.filter(kb=kb, status=DocumentStatus.READY).values_list("source_name", flat=True))
    assert f"127.0.0.1:{site.port}/zh/policy.md" in names and len(names) == 6
