"""A document's versions in headless Chromium, in Chinese and English (issue 38): upload v1, upload v2 under the same
name, restore v1 from the document page (after a confirmation that names v3 and the re-ingestion; cancelled first, which
does nothing); the address never changes, the page lists every version with who replaced
it, the chunks shown are v1's again and the id v2 was ingested on redirects to the document (daphne serving the test
database, inline ingestion)."""
from __future__ import annotations

import pytest

from knowledge.models import Chunk, Document, DocumentAlias, DocumentVersion
from tests.browser import CHROMEDRIVER, CHROMIUM, csp_violations, daphne, open_as, selenium, watch_csp

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

V1 = "# 退货政策\n\n七天无理由退货，商品需保持完好，包装齐全。退货运费由买家承担。\n"
V2 = "# 退货政策\n\n十五天无理由退货，拆封商品也可以退回，运费由卖家承担。\n"


def test_restoring_v1_on_the_document_page_keeps_the_address_and_serves_v1(browser, kb, alice, ingest, settings, tmp_path):
    # A server of its own, reading the files this test's uploads stored: restoring re-ingests v1's kept file.
    with daphne(tmp_path / "daphne.log", ZHIKU_MEDIA_ROOT=str(settings.MEDIA_ROOT)) as server:
        _restore_v1(server, browser, kb, alice, ingest, tmp_path)


def _restore_v1(server, browser, kb, alice, ingest, tmp_path):
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    alice.last_name, alice.first_name = "张", "伟"
    alice.save(update_fields=["last_name", "first_name"])
    (doc,) = ingest(kb, {"policy.md": V1}, user=alice)
    (again,) = ingest(kb, {"policy.md": V2}, user=alice)
    assert again.pk == doc.pk and again.version == 2
    old_id = DocumentAlias.objects.get(document=doc).old_id
    page = f"/kbs/{kb.pk}/documents/{doc.pk}/"

    watch_csp(browser)
    open_as(browser, server, alice, page)
    wait = Wait(browser, 60)
    versions = browser.find_element(By.ID, "versions")
    rows = versions.find_elements(By.CSS_SELECTOR, "tr.version")
    assert [r.get_attribute("data-number") for r in rows] == ["2", "1"]
    assert "当前" in rows[0].text and "张伟" in rows[0].text
    assert "张伟" in rows[1].find_element(By.CLASS_NAME, "version-replaced").text  # who replaced v1
    assert "十五天无理由退货" in browser.find_element(By.TAG_NAME, "body").text
    browser.save_screenshot(str(tmp_path / "versions_zh.png"))

    # Restore asks first, saying what will happen; cancelled, nothing is sent.
    restore = rows[1].find_element(By.CSS_SELECTOR, "button.version-restore")
    dialog = _confirm(browser, wait, restore)
    assert dialog.find_element(By.TAG_NAME, "h2").text == "恢复版本 v1？"
    text = dialog.find_element(By.CLASS_NAME, "confirm-text").text
    assert "新版本 v3 重新导入" in text and "向量化" in text and "v2 提供检索" in text
    assert dialog.find_element(By.CLASS_NAME, "confirm-ok").text == "恢复为 v3"
    browser.save_screenshot("/tmp/versions_confirm_zh.png")
    dialog.find_element(By.CLASS_NAME, "confirm-cancel").click()
    wait.until(lambda d: not dialog.is_displayed())
    assert browser.find_element(By.ID, "version-status").text == ""
    assert Document.objects.get(pk=doc.pk).version == 2 and not Document.objects.filter(replaces=doc).exists()
    assert restore.is_enabled()

    _confirm(browser, wait, restore).find_element(By.CLASS_NAME, "confirm-ok").click()
    # Restored, the page reloads itself with v3 (restored from v1) current.
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#versions tr.version").get_attribute("data-number") == "3")
    assert browser.current_url.endswith(page)
    current = browser.find_element(By.CSS_SELECTOR, "#versions tr.version")
    assert "恢复自 v1" in current.text and "当前" in current.text
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "七天无理由退货" in body and "十五天无理由退货" not in body
    browser.save_screenshot(str(tmp_path / "versions_restored_zh.png"))
    browser.save_screenshot("/tmp/versions_restored_zh.png")

    document = Document.objects.get(pk=doc.pk)
    assert (document.version, document.status) == (3, "ready")
    assert list(DocumentVersion.objects.filter(document=document).order_by("number").values_list("number", flat=True)) == [1, 2, 3]
    contents = " ".join(Chunk.objects.filter(document=document).values_list("content", flat=True))
    assert "七天" in contents and "十五天" not in contents
    assert Document.objects.filter(kb=kb).count() == 1

    # The id v2 was ingested on is an alias now: its page redirects to the document's.
    browser.get(f"{server}/kbs/{kb.pk}/documents/{old_id}/")
    wait.until(lambda d: d.current_url.endswith(page))

    browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
    browser.get(f"{server}{page}")
    wait.until(lambda d: d.find_element(By.ID, "versions").is_displayed())
    text = browser.find_element(By.ID, "versions").text
    assert "Versions" in text and "Current" in text and "(restored from v1)" in text and "Replaced" in text
    assert len(browser.find_elements(By.CSS_SELECTOR, "button.version-restore")) == 2
    # In English too it says what restoring v2 would do; Esc cancels it.
    dialog = _confirm(browser, wait, browser.find_element(By.CSS_SELECTOR, "tr.version[data-number='2'] button.version-restore"))
    assert dialog.find_element(By.TAG_NAME, "h2").text == "Restore version v2?"
    text = dialog.find_element(By.CLASS_NAME, "confirm-text").text
    assert "ingested again as a new version, v4" in text and "v3 keeps serving" in text
    assert dialog.find_element(By.CLASS_NAME, "confirm-ok").text == "Restore as v4"
    browser.save_screenshot("/tmp/versions_confirm_en.png")
    from selenium.webdriver.common.keys import Keys

    dialog.find_element(By.CLASS_NAME, "confirm-cancel").send_keys(Keys.ESCAPE)
    wait.until(lambda d: not dialog.is_displayed())
    assert Document.objects.get(pk=doc.pk).version == 3 and DocumentVersion.objects.filter(document=doc).count() == 3
    browser.save_screenshot(str(tmp_path / "versions_en.png"))
    browser.save_screenshot("/tmp/versions_en.png")
    assert csp_violations(browser) == []


def _confirm(browser, wait, button):
    """Click ``button`` and return the confirmation it opens (static/zhiku/confirm.js), once shown."""
    from selenium.webdriver.common.by import By

    button.click()
    dialog = browser.find_element(By.ID, "confirm-dialog")
    wait.until(lambda d: dialog.is_displayed() and dialog.find_element(By.CLASS_NAME, "confirm-text").text)
    return dialog
