"""The pages work under their Content-Security-Policy in headless Chromium: no violation reported on any console
page or the admin. The policy's text: tests/config/test_csp.py; a chat answer streaming under it:
tests/chat/test_chat_browser.py; the API docs under it: tests/config/test_api_docs_browser.py."""
from __future__ import annotations

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, chromium, csp_violations, open_as, selenium, watch_csp

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

DOC = {"价格.md": "# 知库专业版\n\n## 价格\n\n知库专业版的价格为每年 9800 元，包含 20 个用户席位。\n"}


@pytest.fixture
def watched():
    driver = chromium(console_log=True)
    watch_csp(driver)
    yield driver
    driver.quit()


def refusals(driver) -> list[str]:
    """Chromium's console errors about the policy ("Refused to ..."), a second witness besides the events."""
    return [entry["message"] for entry in driver.get_log("browser") if "Content Security Policy" in entry["message"]]


def test_no_page_reports_a_violation(server, watched, make_user, make_kb, ingest):
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    root = make_user("root", superuser=True)
    kb = make_kb(root, "产品库")
    (document,) = ingest(kb, DOC)
    from django.contrib.auth.models import Group

    group = Group.objects.create(name="售后")
    wait = Wait(watched, 60)

    # Each page, with what shows that its scripts ran (they fill these in from the API).
    pages = {
        "/": "#kb-table",
        f"/kbs/{kb.pk}/": "#doc-rows tr",
        f"/kbs/{kb.pk}/documents/{document.pk}/": "#chunks .chunk",
        f"/kbs/{kb.pk}/settings/": "#member-rows tr",
        f"/kbs/{kb.pk}/evaluation/": "#question-form",
        f"/kbs/{kb.pk}/hit-test/": "#query",
        "/people/": "#people-table",
        f"/people/{root.pk}/": "#person-kbs",
        "/people/groups/": "#group-table",
        f"/people/groups/{group.pk}/": "#add-member-q[role=combobox]",
        "/people/invitations/": "#invitation-form",
        "/account/": "#person-kbs",
        "/admin/": "#content",
        f"/admin/knowledge/knowledgebase/{kb.pk}/change/": "#content form",
    }
    open_as(watched, server, root, "/")
    seen: dict[str, list] = {}
    for path, ready in pages.items():
        watched.get(server + path)
        wait.until(lambda d, ready=ready: d.find_elements(By.CSS_SELECTOR, ready))
        wait.until(lambda d: d.execute_script("return document.readyState") == "complete")
        seen[path] = csp_violations(watched)
    assert seen == {path: [] for path in pages}
    assert refusals(watched) == []
    # The header the browser got is the policy (fetched as the page was).
    header = watched.execute_async_script(
        "fetch('/chat/').then((r) => arguments[0](r.headers.get('content-security-policy')))")
    assert "default-src 'self'" in header and "frame-ancestors 'none'" in header
