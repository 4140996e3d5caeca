"""End to end in headless Chromium: documents deleted in the console, then "who removed this document?" answered
on the audit page by the KB's owner, in Chinese and in English; an editor's audit page is empty."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, open_as, selenium

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

FILES = {
    "退货政策.md": "# 退货政策\n\n购买商品七天内可以无理由退货，退货运费由买家承担。\n",
    "会员积分.md": "# 会员积分\n\n会员每消费一元累积一个积分，积分有效期为十二个月。\n",
}


def shot(browser, tmp_path, name: str) -> Path:
    folder = Path(os.environ.get("ZHIKU_SCREENSHOT_DIR") or tmp_path)
    path = folder / name
    browser.save_screenshot(str(path))
    return path


def delete_in_console(browser, server, user, kb, source_name: str) -> None:
    """Open the KB page as ``user`` and delete ``source_name`` with its row's button, confirming the dialog."""
    from selenium.webdriver.common.by import By

    from knowledge.models import Document
    from tests.browser import Wait

    document = Document.objects.get(kb=kb, source_name=source_name)
    open_as(browser, server, user, f"/kbs/{kb.pk}/")
    wait = Wait(browser, 30)
    row = f'tr[data-doc-id="{document.pk}"]'
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f"{row} button.delete"))
    browser.find_element(By.CSS_SELECTOR, f"{row} button.delete").click()
    wait.until(lambda d: d.switch_to.alert).accept()
    wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, row))


def test_an_owner_finds_who_removed_a_document(server, browser, alice, bob, make_kb, ingest, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from knowledge.services.kbs import membership_set
    from tests.browser import Wait

    kb = make_kb(alice, "售后知识库")
    ingest(kb, FILES, user=alice)
    membership_set(kb=kb, role="editor", user=bob)
    delete_in_console(browser, server, bob, kb, "退货政策.md")
    delete_in_console(browser, server, alice, kb, "会员积分.md")

    # The owner: the KB page's audit link, then only deletions.
    open_as(browser, server, alice, f"/kbs/{kb.pk}/")
    wait = Wait(browser, 30)
    browser.find_element(By.ID, "kb-audit").click()
    wait.until(lambda d: d.find_elements(By.ID, "audit-table"))
    assert browser.current_url.endswith(f"/audit/?kb={kb.pk}")
    Select(browser.find_element(By.ID, "f-action")).select_by_value("document.delete")
    browser.find_element(By.ID, "audit-filter").click()
    wait.until(lambda d: "action=document.delete" in d.current_url)
    rows = browser.find_elements(By.CSS_SELECTOR, "#audit-table tbody tr")
    seen = {r.find_element(By.CSS_SELECTOR, ".audit-object").text.split("\n")[0]:
            r.find_element(By.CSS_SELECTOR, ".audit-actor").text for r in rows}
    assert seen == {"退货政策.md v1": "bob", "会员积分.md v1": "alice"}
    assert all(r.find_element(By.CSS_SELECTOR, ".audit-action").text == "删除文档" for r in rows)
    assert "127.0.0.1" in rows[0].text and "source_name:" in rows[0].text
    assert browser.find_element(By.TAG_NAME, "h1").text == "审计日志"
    shot(browser, tmp_path, "audit-zh.png")

    # The same page in English.
    browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
    browser.refresh()
    wait.until(lambda d: d.find_element(By.TAG_NAME, "h1").text == "Audit log")
    assert {r.find_element(By.CSS_SELECTOR, ".audit-action").text
            for r in browser.find_elements(By.CSS_SELECTOR, "#audit-table tbody tr")} == {"Document deleted"}
    assert "2 entries" in browser.find_element(By.ID, "audit-count").text
    shot(browser, tmp_path, "audit-en.png")

    # The editor who deleted one reads no entries of the KB.
    browser.delete_all_cookies()
    open_as(browser, server, bob, "/audit/")
    wait.until(lambda d: d.find_elements(By.ID, "audit-empty"))
    assert not browser.find_elements(By.ID, "audit-table")
