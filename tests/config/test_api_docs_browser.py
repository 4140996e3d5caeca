"""Issue 9: the API docs work offline. Swagger UI and Redoc render in headless Chromium from files this
installation serves, and nothing the pages ask for leaves the machine."""
from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, chromium, csp_violations, selenium, watch_csp

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def logging_browser():
    """Headless Chromium that records the DevTools network log."""
    driver = chromium(network_log=True)
    watch_csp(driver)
    yield driver
    driver.quit()


def requests_sent(driver) -> dict[str, str]:
    """URL → how it ended: "ok", or why Chromium did not send it (e.g. "csp") or it failed."""
    urls, outcome = {}, {}
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message.get("params", {})
        if message["method"] == "Network.requestWillBeSent":
            urls[params["requestId"]] = params["request"]["url"]
            outcome.setdefault(params["requestId"], "ok")
        elif message["method"] == "Network.loadingFailed":
            outcome[params["requestId"]] = params.get("blockedReason") or params.get("errorText") or "failed"
    return {url: outcome[rid] for rid, url in urls.items() if not url.startswith(("data:", "blob:"))}


@pytest.mark.parametrize(("path", "rendered"), [
    ("/api/docs/", ".swagger-ui .opblock"),  # one block per operation, drawn from the schema
    ("/api/redoc/", ".redoc-wrap"),
])
def test_api_docs_render_from_this_installation_only(server, logging_browser, path, rendered):
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    logging_browser.get(server + path)
    Wait(logging_browser, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, rendered))
    assert "/api/search/" in logging_browser.find_element(By.TAG_NAME, "body").text
    sent = requests_sent(logging_browser)
    here = urlsplit(server).netloc
    assert sent.get(f"{server}/api/schema/") == "ok"  # the schema came from here
    # Nothing reached another host: Redoc's bundle names its logo on cdn.redoc.ly, which the site's CSP blocks.
    assert {url: how for url, how in sent.items() if urlsplit(url).netloc != here and how not in ("csp",)} == {}
    # And the page works under the site's Content-Security-Policy (config/settings.py): nothing else refused.
    assert [v for v in csp_violations(logging_browser) if not v["blocked"].startswith("https://cdn.redoc.ly/")] == []
