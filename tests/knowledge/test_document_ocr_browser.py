"""The document page shows which chunks were read by OCR, with their confidence (issue 23, 8), in headless Chromium."""
from __future__ import annotations

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, open_as, selenium
from tests.docgen import text_image
from tests.knowledge.test_console_browser import shot

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

NOTICE = ["系统维护通知", "一、维护时间", "本周六凌晨两点至四点进行数据库升级，期间暂停服务。",
          "二、注意事项", "请提前保存正在编辑的文档，维护结束后重新登录。"]


def test_ocr_chunks_show_as_such_with_their_confidence(server, browser, alice, kb, ingest, tmp_path):
    from selenium.webdriver.common.by import By

    from knowledge.models import Chunk

    scanned, typed = ingest(kb, {"维护通知.png": text_image(NOTICE), "退货政策.md": "# 退货政策\n\n七天内可以无理由退货。\n"})
    assert scanned.status == "ready", scanned.error_message
    chunks = list(Chunk.objects.filter(document=scanned).order_by("ordinal"))
    assert chunks and all(c.metadata.get("ocr") for c in chunks)
    assert scanned.title == "系统维护通知" and all(c.content != "系统维护通知" for c in chunks)  # the title: no chunk

    open_as(browser, server, alice, f"/kbs/{kb.pk}/documents/{scanned.pk}/")
    badges = browser.find_elements(By.CSS_SELECTOR, "#chunks article.chunk .badge.ocr")
    assert len(badges) == len(chunks)
    for chunk, badge in zip(chunks, badges, strict=True):
        percent = round(chunk.metadata["ocr_confidence"] * 100)
        assert badge.get_attribute("data-ocr-confidence") == str(percent)
        assert badge.text == f"OCR 识别 · 置信度 {percent}%"
        assert "ocr-low" not in badge.get_attribute("class")  # a clean picture reads well
    shot(browser, tmp_path, "document-ocr.png")

    # A chunk read with low confidence asks to be checked against the original.
    low = chunks[0]
    low.metadata = {**low.metadata, "ocr_confidence": 0.55}
    low.save(update_fields=["metadata"])
    browser.refresh()
    badge = browser.find_element(By.CSS_SELECTOR, f"#chunk-{low.pk} .badge.ocr")
    assert "ocr-low" in badge.get_attribute("class") and badge.text == "OCR 识别 · 置信度 55%"
    assert "请对照原文核对" in badge.get_attribute("title")
    assert badge.value_of_css_property("background-color") == "rgba(255, 235, 233, 1)"  # console.css .badge.ocr-low
    shot(browser, tmp_path, "document-ocr-low.png")

    # A typed document has no OCR badge.
    open_as(browser, server, alice, f"/kbs/{kb.pk}/documents/{typed.pk}/")
    assert browser.find_elements(By.CSS_SELECTOR, "#chunks article.chunk")
    assert not browser.find_elements(By.CSS_SELECTOR, ".badge.ocr")
