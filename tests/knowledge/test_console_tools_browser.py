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

    from knowledge.ingestion.text import Chunking
    from knowledge.ingestion.upload import UploadedItem, document_preview
    from knowledge.models import Document
    from knowledge.services.kbs import membership_set
    from tests.browser import Wait

    membership_set(kb=kb, user=bob, role="editor")
    manual, empty = tmp_path / "售后手册.md", tmp_path / "空白.txt"
    manual.write_text(LONG, encoding="utf-8")
    empty.write_text("   \n", encoding="utf-8")
    expected = document_preview(item=UploadedItem(name=manual.name, data=LONG.encode()), chunking=Chunking(size=300, overlap=40))
    wide = document_preview(item=UploadedItem(name=manual.name, data=LONG.encode()), chunking=Chunking(size=1000, overlap=0))
    assert len(wide.drafts) < len(expected.drafts)

    open_as(browser, server, bob, f"/kbs/{kb.pk}/")
    wait = Wait(browser, 60)
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


def test_an_editor_restricts_a_document_and_adds_a_chunk_by_hand(server, browser, alice, bob, kb, ingest, tmp_path):
    from django.contrib.auth.models import Group
    from selenium.webdriver.common.by import By

    from knowledge.models import Chunk, KnowledgeBase
    from knowledge.services.kbs import membership_set
    from tests.browser import Wait

    Group.objects.create(name="人事")
    (document,) = ingest(kb, {"退货政策.md": "# 退货政策\n\n## 运费\n\n七天内可以无理由退货，退货运费由买家承担。\n"})
    membership_set(kb=kb, user=bob, role="editor")
    open_as(browser, server, bob, f"/kbs/{kb.pk}/documents/{document.pk}/")
    wait = Wait(browser, 30)
    assert browser.find_element(By.ID, "restriction-current").text == "知识库的所有成员均可阅读"

    # Restrict to a group: saved through the API, the KB version moves (cached searches expire).
    version = KnowledgeBase.objects.get(pk=kb.pk).version
    _set(browser.find_element(By.ID, "restriction-groups"), "人事")
    browser.find_element(By.ID, "restriction-save").click()
    wait.until(lambda d: d.find_element(By.ID, "restriction-status").text == "已保存。")
    assert browser.find_element(By.ID, "restriction-current").text == "仅限：人事"
    assert list(document.restricted_to_groups.values_list("name", flat=True)) == ["人事"]
    assert KnowledgeBase.objects.get(pk=kb.pk).version > version
    # An unknown group is refused in words, and nothing changes.
    _set(browser.find_element(By.ID, "restriction-groups"), "人事,无此组")
    browser.find_element(By.ID, "restriction-save").click()
    wait.until(lambda d: "保存失败" in d.find_element(By.ID, "restriction-status").text)
    assert "无此组" in browser.find_element(By.ID, "restriction-status").text
    assert list(document.restricted_to_groups.values_list("name", flat=True)) == ["人事"]

    # Add a chunk by hand: the page shows it last, marked, with its section path.
    _set(browser.find_element(By.ID, "chunk-add-path"), "退货政策 > 以旧换新")
    _set(browser.find_element(By.ID, "chunk-add-content"), "以旧换新：交回旧机可抵扣二百元。")
    browser.find_element(By.ID, "chunk-add-submit").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#chunks .chunk .badge.manual"))
    chunk = Chunk.objects.get(document=document, metadata__manual=True)
    article = browser.find_element(By.ID, f"chunk-{chunk.pk}")
    assert article.find_element(By.CSS_SELECTOR, ".text").text == "以旧换新：交回旧机可抵扣二百元。"
    assert article.find_element(By.CSS_SELECTOR, ".section-path").text == "退货政策 › 以旧换新"
    assert "手动添加" in article.text and chunk.embedding is not None and chunk.section_path == ["退货政策", "以旧换新"]
    # An empty chunk is refused in words.
    browser.find_element(By.ID, "chunk-add-content").send_keys("   ")
    browser.execute_script("document.getElementById('chunk-add-content').removeAttribute('required')")
    browser.find_element(By.ID, "chunk-add-submit").click()
    wait.until(lambda d: "添加失败" in d.find_element(By.ID, "chunk-add-status").text)
    assert Chunk.objects.filter(document=document, metadata__manual=True).count() == 1
    shot(browser, tmp_path, "console-document-tools.png")


def test_a_failure_reads_in_the_viewers_language(server, browser, alice, kb):
    from selenium.webdriver.common.by import By

    from knowledge.models import Document
    from tests.browser import Wait

    failed = Document.objects.create(kb=kb, source_name="坏文件.docx", doc_type="docx", sha256="b" * 64, status="failed",
                                     error_code="corrupt_file", error_message="the DOCX file is damaged: Bad CRC-32")
    wait = Wait(browser, 20)
    open_as(browser, server, alice, f"/kbs/{kb.pk}/documents/{failed.pk}/")
    error = browser.find_element(By.ID, "doc-error").text
    assert "处理失败： 文件已损坏或无法读取。" in error and "技术信息： the DOCX file is damaged: Bad CRC-32" in error
    browser.get(f"{server}/kbs/{kb.pk}/")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#doc-rows .doc-error"))
    assert browser.find_element(By.CSS_SELECTOR, "#doc-rows .doc-error").text == "文件已损坏或无法读取。"

    browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
    browser.get(f"{server}/kbs/{kb.pk}/documents/{failed.pk}/")
    assert "Processing failed: The file is damaged or cannot be read." in browser.find_element(By.ID, "doc-error").text
    browser.get(f"{server}/kbs/{kb.pk}/")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#doc-rows .doc-error"))
    assert browser.find_element(By.CSS_SELECTOR, "#doc-rows .doc-error").text == "The file is damaged or cannot be read."


PHONE = {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True}
OVERFLOW = """
    const doc = document.documentElement;
    const wide = [...document.querySelectorAll('body *')].filter((e) => {
        const r = e.getBoundingClientRect();
        if (r.width === 0 || r.right <= doc.clientWidth + 1) return false;
        for (let p = e.parentElement; p; p = p.parentElement) {  // inside a box that scrolls: fine
            const o = getComputedStyle(p).overflowX;
            if ((o === 'auto' || o === 'scroll' || o === 'hidden') && p.getBoundingClientRect().right <= doc.clientWidth + 1) return false;
        }
        return true;
    }).map((e) => e.tagName + (e.id ? '#' + e.id : '') + '.' + e.className);
    return {scroll: doc.scrollWidth, client: doc.clientWidth, wide: wide.slice(0, 5)};
"""


# The element reaching furthest right outside a scrolling box, for the message of a page wider than the phone.
WIDEST = """let best = null, right = 0;
const scrolls = (el) => { for (let p = el.parentElement; p; p = p.parentElement) {
  if (['auto', 'scroll'].includes(getComputedStyle(p).overflowX)) return true; } return false; };
for (const el of document.querySelectorAll('body *')) { const r = el.getBoundingClientRect().right;
  if (r > right && !scrolls(el)) { right = r; best = el; } }
return best ? [best.tagName, best.id, best.className, Math.round(right)] : null;"""


def test_the_console_fits_a_phone(server, browser, alice, kb, ingest, tmp_path):
    """At 390 px: no page scrolls sideways, the header wraps, wide tables scroll inside their own box."""
    import os
    from pathlib import Path

    from selenium.webdriver.common.by import By

    from knowledge.models import Document, EvalQuestion
    from tests.browser import Wait

    (document,) = ingest(kb, {"退货政策.md": "# 退货政策\n\n## 运费\n\n七天内可以无理由退货，退货运费由买家承担。\n"})
    Document.objects.create(kb=kb, source_name="一份名字非常非常长而且没有任何空格的产品说明书最终修订版第三稿.docx", doc_type="docx",
                            sha256="b" * 64, status="failed", error_code="corrupt_file", error_message="the DOCX file is damaged")
    EvalQuestion.objects.create(kb=kb, text="退货运费谁承担？", relevant=["退货政策.md"], answers=["买家"])
    open_as(browser, server, alice, "/")
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", PHONE)
    wait = Wait(browser, 20)
    pages = {"/": "#kb-table", f"/kbs/{kb.pk}/": "#doc-rows tr[data-status=failed]",
             f"/kbs/{kb.pk}/documents/{document.pk}/": "#chunks .chunk", f"/kbs/{kb.pk}/settings/": "#member-rows",
             f"/kbs/{kb.pk}/hit-test/": "#query", f"/kbs/{kb.pk}/evaluation/": "#questions li", "/chat/": "body",
             "/account/tokens/": "#token-form", "/kbs/999999/": ".error-page"}
    for path, ready in pages.items():
        browser.get(server + path)
        wait.until(lambda d, ready=ready: d.find_elements(By.CSS_SELECTOR, ready))
        assert browser.execute_script("return window.innerWidth") == 390, (path, browser.execute_script(WIDEST))
        found = browser.execute_script(OVERFLOW)
        assert found["scroll"] <= found["client"] and not found["wide"], (path, found)
        header = browser.find_element(By.CSS_SELECTOR, ".site-header")
        assert header.rect["width"] <= 390

    # The hit-test results, the widest table of the console, scroll inside their box too.
    browser.get(f"{server}/kbs/{kb.pk}/hit-test/")
    browser.find_element(By.ID, "query").send_keys("退货运费谁承担")
    browser.find_element(By.CSS_SELECTOR, "#hit-form button[type=submit]").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#results table tr td"))
    found = browser.execute_script(OVERFLOW)
    assert found["scroll"] <= found["client"] and not found["wide"], ("hit-test results", found)
    results = browser.find_element(By.CSS_SELECTOR, "#results table")
    assert browser.execute_script("return arguments[0].scrollWidth > arguments[0].clientWidth || "
                                  "arguments[0].parentElement.scrollWidth > arguments[0].parentElement.clientWidth", results)

    # The KB page: the documents table is its own scrolling box, narrower than the screen.
    browser.get(f"{server}/kbs/{kb.pk}/")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#doc-rows tr[data-status=failed]"))
    table = browser.find_element(By.ID, "doc-table")
    assert table.value_of_css_property("overflow-x") == "auto" and table.rect["width"] <= 390
    height = min(browser.execute_script("return document.documentElement.scrollHeight"), 2400)
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {**PHONE, "height": height})
    folder = Path(os.environ.get("ZHIKU_SCREENSHOT_DIR") or tmp_path)
    browser.save_screenshot(str(folder / "console-mobile.png"))


def test_files_dropped_on_the_box_upload_one_request_each(server, browser, alice, kb):
    """Drag and drop: the dropped files are listed, then each is sent with its own progress and reaches ready."""
    from selenium.webdriver.common.by import By

    from knowledge.models import Document
    from tests.browser import Wait

    open_as(browser, server, alice, f"/kbs/{kb.pk}/")
    wait = Wait(browser, 60)
    wait.until(lambda d: "还没有文档" in d.find_element(By.ID, "doc-rows").text)
    browser.execute_script("""
        const data = new DataTransfer();
        data.items.add(new File(["# 运费\\n\\n满99元包邮。\\n"], "运费.md", {type: "text/markdown"}));
        data.items.add(new File(["积分有效期为十二个月。"], "积分.txt", {type: "text/plain"}));
        const zone = document.getElementById("dropzone");
        zone.dispatchEvent(new DragEvent("dragover", {dataTransfer: data, bubbles: true, cancelable: true}));
        zone.dispatchEvent(new DragEvent("drop", {dataTransfer: data, bubbles: true, cancelable: true}));
    """)
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#upload-queue li[data-state=waiting]")) == 2)
    assert not Document.objects.exists()
    browser.find_element(By.ID, "upload-submit").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#upload-queue li[data-state=done]")) == 2)
    for item in browser.find_elements(By.CSS_SELECTOR, "#upload-queue li"):
        assert int(item.get_attribute("data-sent")) > 0 and item.get_attribute("data-document-id")
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#doc-rows tr[data-status=ready]")) == 2)
    assert sorted(Document.objects.values_list("source_name", flat=True)) == ["积分.txt", "运费.md"]


def test_a_waiting_document_shows_its_place_and_when_it_should_be_ready(server, browser, alice, kb, tmp_path):
    from selenium.webdriver.common.by import By

    from knowledge.models import Document, DocumentStatus
    from tests.browser import Wait

    # The KB's pace: 100 chunks from 10,000 bytes in 10 s. Two waiting files of 20,000 bytes: 20 s each.
    Document.objects.create(kb=kb, source_name="done.md", doc_type="md", size=10_000, sha256="a", status=DocumentStatus.READY,
                            chunks_total=100, chunks_done=100, metadata={"timings_ms": {"embed": 10_000}})
    for name in ("一.md", "二.md"):
        Document.objects.create(kb=kb, source_name=name, doc_type="md", size=20_000, sha256=name, status=DocumentStatus.PENDING)
    open_as(browser, server, alice, f"/kbs/{kb.pk}/")
    wait = Wait(browser, 60)

    def queue_text(name: str) -> str:
        return browser.find_element(By.XPATH, f'//tr[.//*[contains(text(), "{name}")]]//*[contains(@class, "doc-queue")]').text

    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".doc-queue"))
    assert queue_text("一.md") == "排队中 · 第 1 位 · 预计 20 秒后就绪"
    assert queue_text("二.md") == "排队中 · 第 2 位 · 预计 40 秒后就绪"
    shot(browser, tmp_path, "console-queue.png")
    browser.add_cookie({"name": "django_language", "value": "en"})
    browser.refresh()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".doc-queue"))
    assert queue_text("二.md") == "Queued · No. 2 in the queue · ready in about 40 seconds"
