"""The KB page names a waiting document's queue (static/zhiku/kb.js): a person's upload, or background work behind
people's uploads (issue 47), in Chinese and in English."""
from __future__ import annotations

import os

import pytest

from knowledge.models import Document, DocumentStatus
from tests.browser import Wait, chromium, daphne, open_as, selenium

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(selenium is None, reason="needs selenium and Chromium")]
SHOTS = os.environ.get("ZHIKU_SCREENSHOTS", "")


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_a_waiting_documents_queue_is_named_on_the_kb_page(language, alice, make_kb, tmp_path):
    demo = make_kb(alice, "演示")
    for i, background in enumerate((True, True, False)):
        Document.objects.create(kb=demo, source_name=f"d{i}.md", doc_type="md", size=1000, sha256=f"s{i}",
                                status=DocumentStatus.PENDING, queued_in_background=background)
    # Celery mode, so that nothing runs them here; its queues are the thread worker's two (knowledge.ingestion.queue).
    with daphne(tmp_path / "daphne.log", ZHIKU_INGEST_MODE="celery") as url:
        browser = chromium()
        try:
            if language == "en":
                browser.get(url + "/static/zhiku/console.css")
                browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
            open_as(browser, url, alice, f"/kbs/{demo.pk}/")
            page = Wait(browser, 30).until(lambda d: "d2.md" in d.page_source and d.find_element("tag name", "body").text)
            if SHOTS:  # the documents' rows in view, to look at
                browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")
                browser.save_screenshot(f"{SHOTS}/queue-{language}.png")
        finally:
            browser.quit()
    if language == "en":
        assert "Queued · No. 1 in the queue" in page
        assert "No. 1 in the background queue, after uploads" in page and "No. 2 in the background queue" in page
    else:
        assert "排队中 · 第 1 位" in page
        assert "后台队列第 1 位，排在上传的文件之后" in page and "后台队列第 2 位" in page
