"""End to end: the console (KB list, KB page, document page) in headless Chromium, as a non-staff editor and a viewer."""
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
    "退货政策.md": "# 退货政策\n\n## 运费\n\n购买商品七天内可以无理由退货，退货运费由买家承担。质量问题导致的退货，运费由商家承担。\n\n"
                 "## 退款时间\n\n退货签收后三个工作日内原路退款。\n",
    "会员积分.md": "# 会员积分\n\n## 累积规则\n\n会员每消费一元累积一个积分，积分有效期为十二个月，过期积分自动清零。\n",
}


def server_password(user, password: str) -> None:
    """Set a password the server can check: the test settings' fast MD5 hasher is not in the server's list."""
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    user.password = PBKDF2PasswordHasher().encode(password, PBKDF2PasswordHasher().salt(), iterations=1000)
    user.save(update_fields=["password"])


def sign_in(browser, server, username: str, password: str):
    """Through the sign-in page, as a person would."""
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    browser.delete_all_cookies()
    browser.get(server + "/accounts/login/?next=/")
    browser.find_element(By.NAME, "username").send_keys(username)
    browser.find_element(By.NAME, "password").send_keys(password)
    browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    Wait(browser, 20).until(lambda d: d.find_elements(By.ID, "username"))
    assert browser.find_element(By.ID, "username").text == username


def shot(browser, tmp_path, name: str):
    """A full-page screenshot into ZHIKU_SCREENSHOT_DIR (e.g. docs/img), else the test's temporary folder."""
    folder = Path(os.environ.get("ZHIKU_SCREENSHOT_DIR") or tmp_path)
    for _ in range(3):  # the window's height to the page's, as long as it keeps growing
        height = browser.execute_script("return document.documentElement.scrollHeight")
        if browser.execute_script("return window.innerHeight") >= min(height, 2400):
            break
        browser.set_window_size(1280, min(height, 2400) + 200)
    browser.save_screenshot(str(folder / name))
    browser.set_window_size(1280, 900)


def test_an_editor_builds_a_kb_and_a_viewer_only_reads_it(server, browser, alice, bob, tmp_path):
    from selenium.webdriver.common.by import By

    from knowledge.models import Chunk, Document, KnowledgeBase
    from knowledge.services.kbs import membership_set
    from tests.browser import Wait

    assert not alice.is_staff
    server_password(alice, "pw-alice")
    server_password(bob, "pw-bob")
    wait = Wait(browser, 60)
    sign_in(browser, server, "alice", "pw-alice")
    assert not browser.find_elements(By.LINK_TEXT, "管理后台")  # the admin link is for staff

    # Create a KB from the list page: it opens on its own page.
    browser.find_element(By.ID, "id_name").send_keys("售后知识库")
    browser.find_element(By.ID, "id_description").send_keys("退货、积分等售后问题")
    browser.find_element(By.ID, "kb-create-submit").click()
    wait.until(lambda d: "/kbs/" in d.current_url)
    kb = KnowledgeBase.objects.get(name="售后知识库")
    assert kb.owner == alice and browser.current_url.endswith(f"/kbs/{kb.pk}/")
    wait.until(lambda d: "还没有文档" in d.find_element(By.ID, "doc-rows").text)

    # Upload two files through the file input; both reach 已就绪.
    paths = []
    for name, text in FILES.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        paths.append(str(path))
    browser.find_element(By.ID, "file-input").send_keys("\n".join(paths))
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#upload-queue li[data-state=waiting]")) == 2)
    browser.find_element(By.ID, "upload-submit").click()

    def ready(d):
        return list(d.find_elements(By.CSS_SELECTOR, "#doc-rows tr[data-status=ready]"))

    wait.until(lambda d: len(ready(d)) == 2)
    assert all(r.find_element(By.CSS_SELECTOR, ".doc-status").text == "已就绪" for r in ready(browser))
    # (the list may show both ready before the browser has the second upload's answer: ingestion is that quick)
    wait.until(lambda d: "已上传" in d.find_element(By.ID, "upload-status").text)
    assert Document.objects.filter(kb=kb, status="ready").count() == 2

    # Search within the KB: a result with its section path and text.
    browser.find_element(By.ID, "search-query").send_keys("退货运费由谁承担")
    browser.find_element(By.ID, "search-submit").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#search-results .result"))
    first = browser.find_elements(By.CSS_SELECTOR, "#search-results .result")[0]
    assert "退货政策 › 运费" in first.find_element(By.CSS_SELECTOR, ".section-path").text
    assert "退货运费由买家承担" in first.find_element(By.CSS_SELECTOR, ".text").text
    shot(browser, tmp_path, "console-kb.png")

    # The home page lists the KB with its counts and the caller's role.
    browser.get(server + "/")
    row = browser.find_element(By.CSS_SELECTOR, f'#kb-table tr[data-kb-id="{kb.pk}"]')
    cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
    assert cells[1] == "所有者" and cells[2] == "2" and cells[3] == str(Chunk.objects.filter(kb=kb).count())

    # Open a document, edit a chunk, reload: the new text is there (and re-embedded).
    browser.get(f"{server}/kbs/{kb.pk}/")
    document = Document.objects.get(kb=kb, source_name="退货政策.md")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f'#doc-rows tr[data-doc-id="{document.pk}"] a.doc-link'))
    browser.find_element(By.CSS_SELECTOR, f'#doc-rows tr[data-doc-id="{document.pk}"] a.doc-link').click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#chunks .chunk button.edit"))
    target = Chunk.objects.filter(document=document, content__contains="退货运费").get()
    article = browser.find_element(By.CSS_SELECTOR, f'.chunk[data-chunk-id="{target.pk}"]')
    assert "退货政策 › 运费" in article.find_element(By.CSS_SELECTOR, ".section-path").text
    before = target.content_hash
    article.find_element(By.CSS_SELECTOR, "button.edit").click()
    editor = article.find_element(By.CSS_SELECTOR, "textarea.chunk-editor")
    editor.clear()
    editor.send_keys("七天内可以无理由退货，退货运费由平台承担。")
    article.find_element(By.CSS_SELECTOR, "button.save").click()
    wait.until(lambda d: not article.find_elements(By.CSS_SELECTOR, "textarea"))
    browser.refresh()
    text = browser.find_element(By.CSS_SELECTOR, f'.chunk[data-chunk-id="{target.pk}"] .text').text
    assert text == "七天内可以无理由退货，退货运费由平台承担。"
    target.refresh_from_db()
    assert target.content_hash != before

    # Switch the chunk off and on again.
    toggle = browser.find_element(By.CSS_SELECTOR, f'.chunk[data-chunk-id="{target.pk}"] button.toggle')
    toggle.click()
    wait.until(lambda d: "已停用" in d.find_element(By.CSS_SELECTOR, f'.chunk[data-chunk-id="{target.pk}"] .state').text)
    target.refresh_from_db()
    assert not target.enabled
    toggle.click()
    wait.until(lambda d: not d.find_element(By.CSS_SELECTOR, f'.chunk[data-chunk-id="{target.pk}"] .state').text)
    shot(browser, tmp_path, "console-document.png")

    # A viewer of the KB: reads documents and chunks, sees no upload control, and the API refuses their upload.
    membership_set(kb=kb, user=bob, role="viewer")
    sign_in(browser, server, "bob", "pw-bob")
    browser.get(f"{server}/kbs/{kb.pk}/")
    wait.until(lambda d: len(ready(d)) == 2)
    assert browser.find_element(By.ID, "my-role").text == "查看者"
    assert not browser.find_elements(By.ID, "file-input") and not browser.find_elements(By.ID, "dropzone")
    assert not browser.find_elements(By.CSS_SELECTOR, "#doc-rows button")
    status = browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const form = new FormData();
        form.append("files", new Blob(["viewer upload"], {type: "text/plain"}), "viewer.txt");
        fetch(arguments[0], {method: "POST", credentials: "same-origin", body: form,
                             headers: {"X-CSRFToken": document.querySelector("input[name=csrfmiddlewaretoken]").value}})
          .then((r) => done(r.status), (e) => done(String(e)));
    """, f"/api/kbs/{kb.pk}/documents/")
    assert status == 403
    assert Document.objects.filter(kb=kb).count() == 2
    browser.get(f"{server}/kbs/{kb.pk}/documents/{document.pk}/")
    assert "七天内可以无理由退货" in browser.find_element(By.ID, "chunks").text
    # No edit, no switch: only the edited chunk's history, which viewers read too (docs/chunks.md).
    assert [b.text for b in browser.find_elements(By.CSS_SELECTOR, "#chunks button")] == ["历史"]


def test_an_owner_changes_settings_and_members(server, browser, alice, bob, kb, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from knowledge.models import KnowledgeBase, Membership
    from tests.browser import Wait

    server_password(alice, "pw-alice")
    wait = Wait(browser, 30)
    sign_in(browser, server, "alice", "pw-alice")
    browser.get(f"{server}/kbs/{kb.pk}/settings/")
    wait.until(lambda d: "还没有其他成员" in d.find_element(By.ID, "member-rows").text)

    lines = browser.find_element(By.ID, "lines").text
    assert "未找到门槛" in lines and "确信线" in lines and "不确定" in lines  # the two lines, with their meaning in words
    for name, value in {"f-top_k": "8", "f-score_threshold": "0.35", "f-answer_threshold": "0.8"}.items():
        field = browser.find_element(By.ID, name)
        field.clear()
        field.send_keys(value)
    Select(browser.find_element(By.ID, "f-fusion")).select_by_value("rrf")
    browser.find_element(By.ID, "f-not_found_text").clear()
    browser.find_element(By.ID, "f-not_found_text").send_keys("抱歉，知识库里没有找到答案。")
    browser.find_element(By.ID, "f-synonyms").send_keys("价格 售价，报价")
    browser.find_element(By.ID, "settings-save").click()
    wait.until(lambda d: d.find_element(By.ID, "settings-status").text == "已保存。")
    kb = KnowledgeBase.objects.get(pk=kb.pk)
    assert (kb.top_k, kb.score_threshold, kb.answer_threshold, kb.fusion) == (8, 0.35, 0.8, "rrf")
    assert kb.not_found_text == "抱歉，知识库里没有找到答案。" and kb.synonyms == [["价格", "售价", "报价"]]

    # Answer settings: extractive, three sources, FAQ direct answer from 0.9, a prompt; kept after a reload.
    Select(browser.find_element(By.ID, "f-answer_mode")).select_by_value("extractive")
    for name, value in {"f-max_sources": "3", "f-faq_direct_threshold": "0.9", "f-system_prompt": "你是售后客服，回答简洁。"}.items():
        field = browser.find_element(By.ID, name)
        field.clear()
        field.send_keys(value)
    browser.find_element(By.ID, "settings-save").click()
    wait.until(lambda d: d.find_element(By.ID, "settings-status").text == "已保存。")
    kb = KnowledgeBase.objects.get(pk=kb.pk)
    assert (kb.answer_mode, kb.max_sources, kb.faq_direct_threshold, kb.system_prompt) == \
        ("extractive", 3, 0.9, "你是售后客服，回答简洁。")
    browser.refresh()
    wait.until(lambda d: d.find_element(By.ID, "f-max_sources").get_attribute("value") == "3")
    assert Select(browser.find_element(By.ID, "f-answer_mode")).first_selected_option.get_attribute("value") == "extractive"
    assert "回答设置" in browser.find_element(By.ID, "settings-form").text

    # A gate above the confidence line is refused with the reason.
    field = browser.find_element(By.ID, "f-score_threshold")
    field.clear()
    field.send_keys("0.9")
    browser.find_element(By.ID, "settings-save").click()
    wait.until(lambda d: "保存失败" in d.find_element(By.ID, "settings-status").text)
    assert "确信线" in browser.find_element(By.ID, "settings-status").text
    assert KnowledgeBase.objects.get(pk=kb.pk).score_threshold == 0.35
    field.clear()
    field.send_keys("0.35")

    # A bad value is refused with the reason, and nothing changes.
    field = browser.find_element(By.ID, "f-name")
    field.clear()
    field.send_keys(" ")
    browser.execute_script("document.getElementById('settings-form').noValidate = true")
    browser.find_element(By.ID, "settings-save").click()
    wait.until(lambda d: "保存失败" in d.find_element(By.ID, "settings-status").text)
    assert KnowledgeBase.objects.get(pk=kb.pk).name == "Alice KB"

    # Members: add bob as a viewer (picked from the search), make him an editor, remove him; a name that matches
    # no one finds no one, and nothing picked is not sent.
    browser.find_element(By.ID, "m-name").send_keys("nobody")
    wait.until(lambda d: "没有匹配的人员" in d.find_element(By.ID, "m-name-list").text)
    browser.find_element(By.ID, "member-add").click()
    wait.until(lambda d: "请从列表中选择" in d.find_element(By.ID, "member-status").text)
    browser.find_element(By.ID, "m-name").clear()
    browser.find_element(By.ID, "m-name").send_keys("bob")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#m-name-list .picker-option[data-kind=user]"))
    browser.find_element(By.CSS_SELECTOR, "#m-name-list .picker-option[data-kind=user]").click()
    browser.find_element(By.ID, "member-add").click()
    wait.until(lambda d: "已添加" in d.find_element(By.ID, "member-status").text)
    assert "bob" in browser.find_element(By.ID, "member-rows").text
    assert Membership.objects.get(kb=kb, user=bob).role == "viewer"
    shot(browser, tmp_path, "console-settings.png")
    Select(browser.find_element(By.CSS_SELECTOR, "#member-rows select")).select_by_value("editor")
    wait.until(lambda d: "已更新" in d.find_element(By.ID, "member-status").text)
    assert Membership.objects.get(kb=kb, user=bob).role == "editor"
    browser.find_element(By.CSS_SELECTOR, "#member-rows button.danger").click()
    browser.switch_to.alert.accept()
    wait.until(lambda d: "还没有其他成员" in d.find_element(By.ID, "member-rows").text)
    assert not Membership.objects.filter(kb=kb).exists()


def test_the_kb_page_follows_progress_live_and_shows_failures(server, browser, alice, bob, kb):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    from knowledge.models import Document
    from knowledge.services.kbs import membership_set
    from tests.browser import Wait

    working = Document.objects.create(kb=kb, source_name="手册.pdf", doc_type="pdf", sha256="a" * 64, status="processing",
                                      chunks_done=3, chunks_total=10)
    Document.objects.create(kb=kb, source_name="坏文件.docx", doc_type="docx", sha256="b" * 64, status="failed",
                            error_code="parse_error", error_message="文件已损坏，无法解析")
    membership_set(kb=kb, user=bob, role="editor")
    open_as(browser, server, bob, f"/kbs/{kb.pk}/")
    # The rows are drawn again at every poll: an element read between two polls may be gone.
    wait = Wait(browser, 20, ignored_exceptions=[StaleElementReferenceException])

    def row(d, doc):
        return d.find_element(By.CSS_SELECTOR, f'#doc-rows tr[data-doc-id="{doc.pk}"]')

    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f'#doc-rows tr[data-doc-id="{working.pk}"]'))
    wait.until(lambda d: row(d, working).find_element(By.CSS_SELECTOR, ".doc-status").text == "处理中"
               and "3 / 10" in row(d, working).text)

    def failed_row_complete(d):
        failed = d.find_element(By.CSS_SELECTOR, "#doc-rows tr[data-status=failed]")
        return (failed.find_element(By.CSS_SELECTOR, ".doc-status").text == "失败"
                and failed.find_element(By.CSS_SELECTOR, ".doc-error").text == "文件已损坏，无法解析"
                and failed.find_elements(By.CSS_SELECTOR, "button.retry") and failed.find_elements(By.CSS_SELECTOR, "button.reindex"))

    wait.until(failed_row_complete)

    # The page polls while a document is on its way: it follows the progress, then the end, without a reload.
    Document.objects.filter(pk=working.pk).update(chunks_done=7)
    wait.until(lambda d: "7 / 10" in row(d, working).text)
    Document.objects.filter(pk=working.pk).update(status="ready", chunks_done=10)
    wait.until(lambda d: row(d, working).find_element(By.CSS_SELECTOR, ".doc-status").text == "已就绪")
    assert "10 个分段" in row(browser, working).text  # polling has stopped: nothing is on its way any more


def test_the_language_switch_turns_the_console_english(server, browser, alice, kb, ingest):
    """Chinese first (the browser asks for zh-CN); the header's switch makes the pages and their scripts English."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    ingest(kb, {"退货政策.md": FILES["退货政策.md"]})
    open_as(browser, server, alice, f"/kbs/{kb.pk}/")
    # A click on the switch reloads the page: an element read while it goes is stale, so read it again.
    wait = Wait(browser, 20, ignored_exceptions=(StaleElementReferenceException,))
    wait.until(lambda d: "共 1 个文档" in d.find_element(By.ID, "doc-summary").text)
    assert "上传文档" in browser.find_element(By.ID, "upload").text
    assert browser.find_element(By.CSS_SELECTOR, "#doc-rows .doc-status").text == "已就绪"

    browser.find_element(By.CSS_SELECTOR, '#language-switch button[value="en"]').click()
    wait.until(lambda d: d.find_element(By.TAG_NAME, "html").get_attribute("lang") == "en")
    assert browser.current_url.endswith(f"/kbs/{kb.pk}/")  # back on the same page
    wait.until(lambda d: "1 document" in d.find_element(By.ID, "doc-summary").text)
    assert "Upload documents" in browser.find_element(By.ID, "upload").text
    assert "Search this knowledge base" in browser.find_element(By.ID, "search-form").text
    assert browser.find_element(By.CSS_SELECTOR, "#doc-rows .doc-status").text == "ready"
    assert "上传" not in browser.find_element(By.TAG_NAME, "main").text
    # The switch back offers Chinese.
    browser.find_element(By.CSS_SELECTOR, '#language-switch button[value="zh-hans"]').click()
    wait.until(lambda d: "共 1 个文档" in d.find_element(By.ID, "doc-summary").text)
