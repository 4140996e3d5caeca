"""A web source on the server's own network is refused by the console's form when it is added, in Chinese and
in English, with what the administrator must set (headless Chromium, a server with the private-address rule on)."""
from __future__ import annotations

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, daphne, selenium
from tests.sources.console_flow import open_kb_page, open_source_form, shot

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

WORDS = {"zh-hans": "内网", "en": "private network"}


@pytest.fixture(scope="module")
def guarded_console(tmp_path_factory, django_db_setup):
    with daphne(tmp_path_factory.mktemp("guarded") / "daphne.log", ZHIKU_SOURCES_ALLOW_PRIVATE="false") as url:
        yield url


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_an_intranet_address_is_refused_by_the_form(guarded_console, browser, alice, kb, tmp_path, language):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from sources.models import Source
    from tests.browser import Wait

    open_kb_page(browser, guarded_console, alice, kb, language)
    open_source_form(browser)
    Select(browser.find_element(By.ID, "add-kind")).select_by_value("web")
    browser.find_element(By.ID, "add-name").send_keys("内网文档")
    browser.find_element(By.ID, "add-web-url").send_keys("http://127.0.0.1:9901/latest/meta-data/")
    browser.find_element(By.ID, "source-add-submit").click()
    status = Wait(browser, 20).until(
        lambda d: d.find_element(By.ID, "source-status").text or None)
    browser.execute_script("document.getElementById('sources').scrollIntoView()")
    shot(browser, tmp_path, f"source-refused-{language}.png")
    assert WORDS[language] in status and "ZHIKU_SOURCES_ALLOW_PRIVATE=true" in status, status
    assert not Source.objects.filter(kb=kb).exists()
