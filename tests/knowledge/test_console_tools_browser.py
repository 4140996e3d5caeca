"""The console's document tools in headless Chromium: chunking preview, per-file upload progress, a document's
group restriction, chunks added by hand, failures in the viewer's language, and the pages at a phone's width."""
from __future__ import annotations

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, open_as, selenium
from tests.knowledge.test_console_browser import shot

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

LONG = "# 售后手册\n\n## 退货\n\n" + "".join(f"第{i}条：商品签收后七天内可以申请无理由退货，运费由买家承担。" for i in range(60)) + "\n"


def _set(element, value: str) -> None:
    element.clear()
    element.send_keys(value)


def test_an_editor_previews_the_chunking_then_uploads_each_file_with_its_progress(server, browser, alice, bob, kb, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from knowledge.models import Document
    from knowledge.services.documents import Chunking, UploadedItem, document_preview
    from knowledge.services.kbs import membership_set

    membership_set(kb=kb, user=bob, role="editor")
    manual, empty = tmp_path / "售后手册.md", tmp_path / "空白.txt"
    manual.write_text(LONG, encoding="utf-8")
    empty.write_text("   \n", encoding="utf-8")
    expected = document_preview(item=UploadedItem(name=manual.name, data=LONG.encode()), chunking=Chunking(size=300, overlap=40))
    wide = document_preview(item=UploadedItem(name=manual.name, data=LONG.encode()), chunking=Chunking(size=1000, overlap=0))
    assert len(wide.drafts) < len(expected.drafts)

    open_as(browser, server, bob, f"/kbs/{kb.pk}/")
    wait = WebDriverWait(browser, 60)
    wait.until(lambda d: "还没有文档" in d.find_element(By.ID, "doc-rows").text)
    browser.find_element(By.ID, "file-input").send_keys(f"{manual}\n{empty}")
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#upload-queue li[data-state=waiting]")) == 2)
    assert not Document.objects.exists()  # choosing files commits nothing

    # Preview with one setting, then another: the page shows what the chunker makes.
    item = browser.find_element(By.CSS_SELECTOR, f'#upload-queue li[data-name="{manual.name}"]')
    _set(browser.find_element(By.ID, "chunk-size"), "1000")
    _set(browser.find_element(By.ID, "chunk-overlap"), "0")
    item.find_element(By.CSS_SELECTOR, "button.preview").click()
    wait.until(lambda d: d.find_element(By.ID, "preview").get_attribute("data-count") == str(len(wide.drafts)))
    _set(browser.find_element(By.ID, "chunk-size"), "300")
    _set(browser.find_element(By.ID, "chunk-overlap"), "40")
    item.find_element(By.CSS_SELECTOR, "button.preview").click()
    wait.until(lambda d: d.find_element(By.ID, "preview").get_attribute("data-count") == str(len(expected.drafts)))
    chunks = browser.find_elements(By.CSS_SELECTOR, "#preview-chunks .preview-chunk")
    assert len(chunks) == len(expected.drafts)
    assert chunks[0].find_element(By.CSS_SELECTOR, ".text").text == expected.drafts[0].content
    assert "售后手册 › 退货" in chunks[0].find_element(By.CSS_SELECTOR, ".section-path").text
    summary = browser.find_element(By.ID, "preview-summary").text
    assert f"共 {len(expected.drafts)} 个分段" in summary and "分段长度 300" in summary
    assert not Document.objects.exists()  # a preview stores nothing
    shot(browser, tmp_path, "console-upload-preview.png")

    # A chunk size out of range is refused, in words.
    _set(browser.find_element(By.ID, "chunk-size"), "10")
    item.find_element(By.CSS_SELECTOR, "button.preview").click()
    wait.until(lambda d: "预览失败" in d.find_element(By.ID, "preview-summary").text)
    assert "分段长度必须在 50 到 4000 个字符之间" in browser.find_element(By.ID, "preview-summary").text
    _set(browser.find_element(By.ID, "chunk-size"), "300")

    # Upload: each file its own request with its own progress; the empty one fails alone.
    browser.find_element(By.ID, "upload-submit").click()
    done = f'#upload-queue li[data-name="{manual.name}"][data-state=done]'
    failed = f'#upload-queue li[data-name="{empty.name}"][data-state=failed]'
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, done) and d.find_elements(By.CSS_SELECTOR, failed))
    sent = browser.find_element(By.CSS_SELECTOR, done)
    assert int(sent.get_attribute("data-sent")) >= manual.stat().st_size  # the XHR reported the bytes it sent
    bar = sent.find_element(By.CSS_SELECTOR, "progress")
    assert float(bar.get_attribute("value")) == float(bar.get_attribute("max"))
    assert "文件为空" in browser.find_element(By.CSS_SELECTOR, failed).text
    assert "已上传 1 / 2 个文件" in browser.find_element(By.ID, "upload-status").text
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#doc-rows tr[data-status=ready]"))
    document = Document.objects.get()
    assert (document.chunk_size, document.chunk_overlap) == (300, 40)
    assert list(document.chunks.order_by("ordinal").values_list("content", flat=True)) == [d.content for d in expected.drafts]
