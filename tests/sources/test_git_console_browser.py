"""The Git and S3 kinds' forms on the KB page in headless Chromium, in Chinese and English: their labels and
help translated, secrets as password boxes; a Git source added there runs against a repository the test commits
to (file://, private addresses allowed for the server)."""
from __future__ import annotations

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, selenium
from tests.sources.console_flow import open_kb_page, open_source_form, run_and_count, run_button, shot
from tests.sources.git_server import GitSource

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

WORDS = {"zh-hans": {"url": "仓库地址", "token": "访问令牌（HTTPS）", "paths": "路径", "bucket": "存储桶",
                     "endpoint": "端点地址", "secret": "访问密钥 Secret", "succeeded": "成功"},
         "en": {"url": "Repository URL", "token": "Access token (HTTPS)", "paths": "Paths", "bucket": "Bucket",
                "endpoint": "Endpoint URL", "secret": "Secret access key", "succeeded": "succeeded"}}


def label(browser, for_id: str) -> str:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.CSS_SELECTOR, f"label[for='{for_id}']").text


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_git_and_s3_forms_then_a_git_source_runs(sources_console, browser, alice, kb, tmp_path, language):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from knowledge.models import Document, DocumentStatus
    from tests.browser import Wait

    repo = GitSource(tmp_path / "handbook")
    repo.write("docs/退货.md", "# 退货政策\n\n购买七天内可以无理由退货。\n")
    repo.write("docs/积分.md", "# 会员积分\n\n每消费一元累积一个积分。\n")
    repo.write("README.txt", "not under docs\n")
    repo.commit("first")
    words = WORDS[language]
    open_kb_page(browser, sources_console, alice, kb, language)
    open_source_form(browser)

    Select(browser.find_element(By.ID, "add-kind")).select_by_value("s3")
    assert label(browser, "add-s3-bucket") == words["bucket"] + " *"
    assert label(browser, "add-s3-endpoint_url") == words["endpoint"]
    assert browser.find_element(By.ID, "add-s3-secret-secret_access_key").get_attribute("type") == "password"
    assert label(browser, "add-s3-secret-secret_access_key") == words["secret"]
    browser.execute_script("document.getElementById('sources').scrollIntoView()")
    shot(browser, tmp_path, f"sources-s3-form-{language}.png")

    Select(browser.find_element(By.ID, "add-kind")).select_by_value("git")
    assert label(browser, "add-git-url") == words["url"] + " *"
    assert label(browser, "add-git-paths") == words["paths"]
    assert label(browser, "add-git-secret-token") == words["token"]
    browser.find_element(By.ID, "add-name").send_keys("员工手册" if language == "zh-hans" else "Handbook")
    browser.find_element(By.ID, "add-git-url").send_keys(repo.url)
    browser.find_element(By.ID, "add-git-paths").send_keys("docs")
    browser.execute_script("document.getElementById('sources').scrollIntoView()")
    shot(browser, tmp_path, f"sources-git-form-{language}.png")
    browser.find_element(By.ID, "source-add-submit").click()
    Wait(browser, 20).until(lambda d: d.find_elements(By.ID, "source-page"))

    assert run_and_count(browser, run_button(browser), words["succeeded"]) == ["2", "0", "0", "0", "0"]
    shot(browser, tmp_path, f"sources-git-source-{language}.png")
    names = set(Document.objects.filter(kb=kb, status=DocumentStatus.READY).values_list("source_name", flat=True))
    assert names == {"docs/退货.md", "docs/积分.md"}
