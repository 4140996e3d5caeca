"""In headless Chromium: the share link's page and the embedded chat draw an answer's Markdown as the console does
(static/zhiku/richtext.js markdown()): a quoted table row is a <table> under its header, with its citation; a
passage holding <script> and <img onerror> is shown as text, nothing of it runs; the page's CSP is never violated.
The platform is the session's daphne (extractive answers, tests/browser.py); the embed sits on a page of another
origin (tests/assistants/test_embed_browser.py)."""
from __future__ import annotations

import pytest

from assistants.services import assistant_create, assistant_update
from tests.assistants.test_answer_tables import QUESTION, SPECS
from tests.assistants.test_embed_browser import HOST_PAGE, ask_in, other_site, wait_ready
from tests.browser import CHROMEDRIVER, CHROMIUM, csp_violations, selenium, watch_csp

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

HOSTILE = ("网页注入的常见写法是 <script>window.__pwned = 1</script> 和 <img src=x onerror=\"window.__pwned = 2\">，"
           "知库把它们原样显示为文字。\n")
HOSTILE_QUESTION = "网页注入的常见写法是什么？"


@pytest.fixture
def specs_assistant(make_kb, ingest, alice):
    kb = make_kb(alice, "车型参数")
    ingest(kb, {"xk.md": SPECS, "security.txt": HOSTILE})
    return assistant_create(owner=alice, name="参数助手", kb_ids=[kb.pk])


def table_of(answer) -> list[list[str]]:
    """The answer's one table, as the rows of its cells' texts (the header row first)."""
    from selenium.webdriver.common.by import By

    tables = answer.find_elements(By.CSS_SELECTOR, ".vc-answer table")
    assert len(tables) == 1, answer.get_attribute("innerHTML")
    return [[cell.text for cell in row.find_elements(By.CSS_SELECTOR, "th, td")]
            for row in tables[0].find_elements(By.TAG_NAME, "tr")]


def assert_the_charging_row(answer) -> None:
    from selenium.webdriver.common.by import By

    header, *rows = table_of(answer)
    assert header == ["参数", "XK-300", "XK-500"]
    assert [r[:2] for r in rows] == [["充电时间", "6小时"]] and rows[0][2].startswith("8小时")
    assert answer.find_elements(By.CSS_SELECTOR, ".vc-answer table th")  # the header row is drawn as a header
    assert answer.find_elements(By.CSS_SELECTOR, ".vc-answer td .vc-cite")  # the citation, in the row's last cell


def test_the_share_page_draws_a_table_and_shows_markup_as_text(server, browser, specs_assistant, alice):
    from selenium.webdriver.common.by import By

    assistant_update(assistant=specs_assistant, user=alice, share_access="public")
    watch_csp(browser)
    browser.get(f"{server}/s/{specs_assistant.share_token}/")
    answer = ask_in(browser, QUESTION)
    assert_the_charging_row(answer)
    browser.save_screenshot("/tmp/share_table.png")

    hostile = ask_in(browser, HOSTILE_QUESTION)
    shown = hostile.find_element(By.CSS_SELECTOR, ".vc-answer")
    assert "<script>window.__pwned = 1</script>" in shown.text and 'onerror="window.__pwned = 2"' in shown.text
    assert shown.find_elements(By.CSS_SELECTOR, "script, img") == []
    assert browser.execute_script("return window.__pwned === undefined")
    assert csp_violations(browser) == []
    browser.save_screenshot("/tmp/share_hostile.png")


def test_the_embedded_chat_draws_a_table(server, browser, specs_assistant, alice, tmp_path):
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    with other_site(tmp_path) as port:
        site = f"http://localhost:{port}"
        assistant_update(assistant=specs_assistant, user=alice, allowed_origins=[site])
        (tmp_path / "index.html").write_text(HOST_PAGE.format(server=server, id=specs_assistant.pk), encoding="utf-8")
        watch_csp(browser)
        browser.get(site + "/index.html")
        Wait(browser, 20).until(lambda d: d.find_element(By.CSS_SELECTOR, ".zhiku-chat-bubble")).click()
        browser.switch_to.frame(browser.find_element(By.CSS_SELECTOR, "iframe.zhiku-chat-frame"))
        wait_ready(browser)
        answer = ask_in(browser, QUESTION)
        assert_the_charging_row(answer)
        assert csp_violations(browser) == []
        browser.switch_to.default_content()
        browser.save_screenshot("/tmp/embed_table.png")
