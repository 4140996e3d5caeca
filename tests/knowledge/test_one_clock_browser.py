"""One clock (issue 47 item 3), in headless Chromium set to another zone than the site's: the same moment reads the
same on the pages the server draws (home, the document's versions, the audit log) and on those a script draws (the
KB's document list, a chunk's history), in the site's TIME_ZONE, in Chinese and in English."""
from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, Wait, daphne, open_as, selenium

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

MOMENT = datetime(2026, 12, 7, 16, 17, 5, tzinfo=UTC)
SHANGHAI = "2026-12-08 00:17"  # the moment in Asia/Shanghai (UTC+8); New York, the browser's zone, says 11:17
GUIDE = "# 退货政策\n\n七天无理由退货，商品需保持完好，包装齐全。退货运费由买家承担。\n"


def shot(browser, tmp_path, name: str) -> None:
    browser.save_screenshot(str(Path(os.environ.get("ZHIKU_SCREENSHOT_DIR") or tmp_path) / name))


def _at_the_moment(kb, alice, ingest):
    """A document uploaded, changed, its chunk edited and an audit entry, all stamped ``MOMENT``."""
    from audit.models import AuditEntry
    from core.audit import Action
    from knowledge.models import Chunk, Document, KnowledgeBase
    from knowledge.revision_models import ChunkRevision
    from knowledge.services.chunks import chunk_update
    from knowledge.version_models import DocumentVersion

    (doc,) = ingest(kb, {"guide.md": GUIDE}, user=alice)
    chunk = Chunk.objects.select_related("kb", "document").get(document=doc, ordinal=0)
    chunk_update(chunk=chunk, content=chunk.content.replace("七天", "十五天"), user=alice)
    Document.objects.filter(pk=doc.pk).update(updated_at=MOMENT)
    KnowledgeBase.objects.filter(pk=kb.pk).update(updated_at=MOMENT)
    DocumentVersion.objects.filter(document_id=doc.pk).update(uploaded_at=MOMENT)
    ChunkRevision.objects.filter(chunk=chunk).update(created_at=MOMENT)
    AuditEntry(action=Action.KB_UPDATE, at=MOMENT, kb_id=kb.pk, kb_name=kb.name, object_repr="时钟").save()
    return doc, chunk


def _times(browser, server: str, alice, kb, doc, chunk) -> dict[str, str]:
    """What each page says of ``MOMENT``."""
    from selenium.webdriver.common.by import By

    wait = Wait(browser, 30)
    times = {}
    browser.get(server + "/")
    times["home (server)"] = browser.find_element(By.CSS_SELECTOR, f'tr[data-kb-id="{kb.pk}"] time').text
    browser.get(f"{server}/kbs/{kb.pk}/")
    row = f'tr[data-doc-id="{doc.pk}"]'
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, row))
    times["document list (script)"] = browser.find_elements(By.CSS_SELECTOR, f"{row} td.nowrap.small")[-1].text
    browser.get(f"{server}/kbs/{kb.pk}/documents/{doc.pk}/")
    times["versions (server)"] = browser.find_element(By.CSS_SELECTOR, "tr.version td:nth-child(2)").text.split(" · ")[0]
    article = browser.find_element(By.ID, f"chunk-{chunk.pk}")
    article.find_element(By.CSS_SELECTOR, ".meta button.history").click()
    wait.until(lambda d: article.find_elements(By.CSS_SELECTOR, ".chunk-history .revision .when"))
    times["chunk history (script)"] = article.find_element(By.CSS_SELECTOR, ".chunk-history .revision .when").text
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", article)
    browser.get(f"{server}/audit/?kb={kb.pk}&action=kb.update")
    times["audit log (server)"] = browser.find_element(By.CSS_SELECTOR, "#audit-table tbody tr td").text
    return times


def test_a_moment_reads_the_same_on_server_and_script_pages(browser, kb, alice, ingest, tmp_path):
    from selenium.webdriver.common.by import By

    alice.is_staff = True  # the audit log's every entry
    alice.save(update_fields=["is_staff"])
    doc, chunk = _at_the_moment(kb, alice, ingest)
    browser.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": "America/New_York"})
    with daphne(tmp_path / "daphne.log", TZ_NAME="Asia/Shanghai") as server:
        open_as(browser, server, alice, "/")
        assert browser.execute_script("return Intl.DateTimeFormat().resolvedOptions().timeZone") == "America/New_York"
        assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-time-zone") == "Asia/Shanghai"
        times = _times(browser, server, alice, kb, doc, chunk)
        assert times == {
            "home (server)": SHANGHAI, "document list (script)": SHANGHAI, "versions (server)": SHANGHAI,
            "chunk history (script)": SHANGHAI, "audit log (server)": SHANGHAI + ":05",
        }
        # The audit log names the zone its times are in.
        assert browser.find_element(By.ID, "audit-time-head").text == "时间 Asia/Shanghai"
        shot(browser, tmp_path, "clock_audit_zh.png")

        browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
        assert set(_times(browser, server, alice, kb, doc, chunk).values()) == {SHANGHAI, SHANGHAI + ":05"}
        assert browser.find_element(By.ID, "audit-time-head").text == "Time Asia/Shanghai"
        browser.get(f"{server}/kbs/{kb.pk}/documents/{doc.pk}/")
        article = browser.find_element(By.ID, f"chunk-{chunk.pk}")
        article.find_element(By.CSS_SELECTOR, ".meta button.history").click()
        Wait(browser, 30).until(lambda d: article.find_elements(By.CSS_SELECTOR, ".chunk-history .revision .when"))
        browser.execute_script("document.getElementById('versions').scrollIntoView({block: 'start'})")
        shot(browser, tmp_path, "clock_document_en.png")
