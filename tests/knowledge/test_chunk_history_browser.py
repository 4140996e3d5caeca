"""A chunk's history on the document page in headless Chromium, in Chinese and English (issue 38 item 2): the edited
chunk is marked, its History opens its changes as diffs (<del>/<ins>), an editor reverts one (after a confirmation
that names the new change and the re-embedding; cancelled first, which does nothing) and the text, the mark
and the list follow; a viewer sees the history without the revert; a re-ingest's pinned chunk and its notice show."""
from __future__ import annotations

import shutil

import pytest

from knowledge.models import Chunk, Role
from knowledge.services.chunks import chunk_update
from knowledge.services.documents import document_reindex
from knowledge.services.kbs import membership_set
from tests.browser import CHROMEDRIVER, CHROMIUM, Wait, csp_violations, open_as, selenium, watch_csp

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

GUIDE = ("# 退货政策\n\n七天无理由退货，商品需保持完好，包装齐全。退货运费由买家承担。\n\n"
         "## 运费\n\n满99元包邮，偏远地区（新疆、西藏）除外，需另付运费二十元。\n")


def _page(kb, alice, bob, ingest, run_now):
    """The guide with its shipping chunk edited then re-indexed (kept, pinned) and its first chunk edited twice."""
    alice.last_name, alice.first_name = "王", "丽"
    alice.save(update_fields=["last_name", "first_name"])
    membership_set(kb=kb, user=bob, role=Role.VIEWER)
    (doc,) = ingest(kb, {"guide.md": GUIDE}, user=alice)
    first, shipping = Chunk.objects.select_related("kb", "document").filter(document=doc).order_by("ordinal")
    chunk_update(chunk=shipping, content="满199元包邮，独角兽会员全国包邮。", user=alice)
    with run_now(execute=True):
        document_reindex(document=doc)
    first = Chunk.objects.select_related("kb", "document").get(document=doc, ordinal=0)
    chunk_update(chunk=first, content=first.content.replace("七天", "十五天"), user=alice)
    chunk_update(chunk=first, content=first.content.replace("退货运费由买家承担。", "退货运费由卖家承担。"), user=alice)
    return doc, first


def test_history_diff_and_revert_on_the_document_page(server, browser, kb, alice, bob, ingest, tmp_path,
                                                      django_capture_on_commit_callbacks):
    from selenium.webdriver.common.by import By

    doc, first = _page(kb, alice, bob, ingest, django_capture_on_commit_callbacks)
    page = f"/kbs/{kb.pk}/documents/{doc.pk}/"
    watch_csp(browser)
    open_as(browser, server, alice, page)
    wait = Wait(browser, 30)
    report = browser.find_element(By.ID, "edits-report").text
    assert "重新导入版本 v2 时，有 1 个编辑过的分段在文件中已找不到" in report
    pinned = browser.find_elements(By.CSS_SELECTOR, "#chunks article.chunk")[-1]
    assert "已固定" in pinned.text and "已编辑" in pinned.text and "独角兽会员" in pinned.text

    article = browser.find_element(By.ID, f"chunk-{first.pk}")
    assert "已编辑" in article.find_element(By.CSS_SELECTOR, ".badge.edited").text
    article.find_element(By.CSS_SELECTOR, ".meta button.history").click()
    wait.until(lambda d: len(article.find_elements(By.CSS_SELECTOR, ".chunk-history .revision")) == 2)
    revisions = article.find_elements(By.CSS_SELECTOR, ".chunk-history .revision")
    assert [r.get_attribute("data-number") for r in revisions] == ["2", "1"]
    newest, oldest = revisions
    assert "王丽" in newest.text and "已编辑" in newest.text and "版本 v2" in newest.text
    assert [e.text for e in newest.find_elements(By.TAG_NAME, "del")] == ["买"]
    assert [e.text for e in newest.find_elements(By.TAG_NAME, "ins")] == ["卖"]
    assert [e.text for e in oldest.find_elements(By.TAG_NAME, "del")] == ["七"]
    assert [e.text for e in oldest.find_elements(By.TAG_NAME, "ins")] == ["十五"]
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", article)
    browser.save_screenshot(str(tmp_path / "history_zh.png"))
    shutil.copyfile(tmp_path / "history_zh.png", "/tmp/chunk_history_zh.png")

    # Revert asks first, saying what will happen; cancelled, nothing is sent.
    dialog = _confirm(browser, wait, oldest.find_element(By.CSS_SELECTOR, "button.revert"))
    assert dialog.find_element(By.TAG_NAME, "h2").text == "恢复到第 1 次修改之前的文本？"
    text = dialog.find_element(By.CLASS_NAME, "confirm-text").text
    assert "新的第 3 次修改" in text and "立即重新向量化" in text
    assert dialog.find_element(By.CLASS_NAME, "confirm-ok").text == "恢复到第 1 次修改前"
    browser.save_screenshot("/tmp/chunk_revert_confirm_zh.png")
    dialog.find_element(By.CLASS_NAME, "confirm-cancel").click()
    wait.until(lambda d: not dialog.is_displayed())
    assert "卖家" in Chunk.objects.get(pk=first.pk).content and first.revisions.count() == 2
    assert len(article.find_elements(By.CSS_SELECTOR, ".chunk-history .revision")) == 2

    _confirm(browser, wait, oldest.find_element(By.CSS_SELECTOR, "button.revert")).find_element(
        By.CLASS_NAME, "confirm-ok").click()  # back to the file's text
    wait.until(lambda d: "已恢复" in article.find_element(By.CSS_SELECTOR, ".revert-done").text)
    assert "七天无理由退货" in article.find_element(By.CSS_SELECTOR, ".text").text
    assert "卖家" not in article.find_element(By.CSS_SELECTOR, ".text").text
    assert not article.find_elements(By.CSS_SELECTOR, ".badge.edited")  # the file's own text again
    revisions = article.find_elements(By.CSS_SELECTOR, ".chunk-history .revision")
    assert revisions[0].get_attribute("data-number") == "3" and "恢复到第 1 次修改前" in revisions[0].text
    browser.save_screenshot(str(tmp_path / "reverted_zh.png"))
    shutil.copyfile(tmp_path / "reverted_zh.png", "/tmp/chunk_reverted_zh.png")
    assert Chunk.objects.get(pk=first.pk).content == "七天无理由退货，商品需保持完好，包装齐全。退货运费由买家承担。"
    assert csp_violations(browser) == []

    # A viewer reads the history but has no revert; in English on request.
    browser.delete_all_cookies()
    open_as(browser, server, bob, page)
    browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
    browser.get(f"{server}{page}")
    report = browser.find_element(By.ID, "edits-report").text
    assert "At the re-ingest of version v2, 1 edited chunk was no longer in the file" in report
    pinned = browser.find_elements(By.CSS_SELECTOR, "#chunks article.chunk")[-1]
    assert "pinned" in pinned.text and "edited" in pinned.text
    pinned.find_element(By.CSS_SELECTOR, ".meta button.history").click()
    wait.until(lambda d: len(pinned.find_elements(By.CSS_SELECTOR, ".chunk-history .revision")) == 2)
    pin, edit = pinned.find_elements(By.CSS_SELECTOR, ".chunk-history .revision")
    assert "kept at re-ingest" in pin.text and "the platform" in pin.text
    assert "the new version of the file no longer has this text" in pin.text
    assert "edited" in edit.text and [e.text for e in edit.find_elements(By.TAG_NAME, "ins")]
    assert not browser.find_elements(By.CSS_SELECTOR, "button.revert")
    article = browser.find_element(By.ID, f"chunk-{first.pk}")
    article.find_element(By.CSS_SELECTOR, ".meta button.history").click()
    wait.until(lambda d: len(article.find_elements(By.CSS_SELECTOR, ".chunk-history .revision")) == 3)
    assert "back to the text before change #1" in article.find_element(By.CSS_SELECTOR, ".revision").text
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", article)
    browser.save_screenshot(str(tmp_path / "history_en.png"))
    shutil.copyfile(tmp_path / "history_en.png", "/tmp/chunk_history_en.png")
    assert csp_violations(browser) == []

    # An editor in English: the confirmation says the same; cancelled, the chunk keeps its text.
    browser.delete_all_cookies()
    open_as(browser, server, alice, page)
    browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
    browser.get(f"{server}{page}")
    article = browser.find_element(By.ID, f"chunk-{first.pk}")
    article.find_element(By.CSS_SELECTOR, ".meta button.history").click()
    wait.until(lambda d: len(article.find_elements(By.CSS_SELECTOR, ".chunk-history .revision")) == 3)
    newest = article.find_element(By.CSS_SELECTOR, ".chunk-history .revision[data-number='2']")
    dialog = _confirm(browser, wait, newest.find_element(By.CSS_SELECTOR, "button.revert"))
    assert dialog.find_element(By.TAG_NAME, "h2").text == "Revert to the text before change #2?"
    text = dialog.find_element(By.CLASS_NAME, "confirm-text").text
    assert "as a new change, #4," in text and "embedded again at once" in text
    assert dialog.find_element(By.CLASS_NAME, "confirm-ok").text == "Revert to before #2"
    browser.save_screenshot("/tmp/chunk_revert_confirm_en.png")
    dialog.find_element(By.CLASS_NAME, "confirm-cancel").click()
    wait.until(lambda d: not dialog.is_displayed())
    assert Chunk.objects.get(pk=first.pk).content == "七天无理由退货，商品需保持完好，包装齐全。退货运费由买家承担。"
    assert first.revisions.count() == 3
    assert csp_violations(browser) == []


def _confirm(browser, wait, button):
    """Click ``button`` and return the confirmation it opens (static/zhiku/confirm.js), once shown."""
    from selenium.webdriver.common.by import By

    button.click()
    dialog = browser.find_element(By.ID, "confirm-dialog")
    wait.until(lambda d: dialog.is_displayed() and dialog.find_element(By.CLASS_NAME, "confirm-text").text)
    return dialog
