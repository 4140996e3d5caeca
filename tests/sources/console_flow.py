"""What the sources' browser tests share: screenshots, opening the KB page in a language, and running a source from
its page until the run has finished (their live server is the ``sources_console`` fixture, tests/sources/conftest.py)."""
from __future__ import annotations

import os
from pathlib import Path

from tests.browser import open_as


def shot(browser, tmp_path, name: str) -> None:
    """A full-page screenshot in ZHIKU_SCREENSHOT_DIR (else the test's tmp_path)."""
    folder = Path(os.environ.get("ZHIKU_SCREENSHOT_DIR") or tmp_path)
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, min(height, 2400) + 100)
    browser.save_screenshot(str(folder / name))
    browser.set_window_size(1280, 900)


def open_kb_page(browser, url: str, user, kb, language: str) -> None:
    """``user`` signed in on ``kb``'s page, in ``language`` (the cookie is set before and after signing in)."""
    browser.get(url + "/static/zhiku/console.css")
    if language == "en":
        browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
    open_as(browser, url, user, f"/kbs/{kb.pk}/")
    if language == "en":
        browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
        browser.get(url + f"/kbs/{kb.pk}/")


def open_source_form(browser) -> None:
    """Unfold the KB page's "Add a source" form (folded until asked for)."""
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    browser.find_element(By.CSS_SELECTOR, "#source-add > summary").click()
    Wait(browser, 5).until(lambda d: d.find_element(By.ID, "add-name").is_displayed())


def run_button(browser):
    from selenium.webdriver.common.by import By

    return next(b for b in browser.find_elements(By.CSS_SELECTOR, "button[data-action=run]") if b.is_displayed())


def run_and_count(browser, button, succeeded: str, timeout: float = 60) -> list[str]:
    """Click ``button`` (run now), wait for the newest run to read ``succeeded``; its added / updated / unchanged /
    removed / failed counts."""
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    button.click()
    Wait(browser, timeout).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#run-table .run-row"))
    row = Wait(browser, timeout).until(
        lambda d: succeeded in d.find_element(By.CSS_SELECTOR, "#run-table .run-row").text
        and d.find_element(By.CSS_SELECTOR, "#run-table .run-row"))
    return [c.text for c in row.find_elements(By.CSS_SELECTOR, "td.num")]
