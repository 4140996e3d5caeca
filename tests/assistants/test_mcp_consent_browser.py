"""The MCP sign-in's consent page in headless Chromium against daphne: Chinese by default, English on request, under
the console's strict CSP; allowing sends the browser back to the client with a code (and the issuer), denying with
access_denied. Screenshots: /tmp/mcp-consent-zh.png and /tmp/mcp-consent-en.png."""
from __future__ import annotations

import base64
import hashlib
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests

from tests.assistants.mcp_oauth_helpers import REDIRECT_URI
from tests.browser import CHROMEDRIVER, CHROMIUM, csp_violations, open_as, selenium, watch_csp

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

VERIFIER = "v" * 64
CHALLENGE = base64.urlsafe_b64encode(hashlib.sha256(VERIFIER.encode()).digest()).decode().rstrip("=")


def _authorize_path(server: str, client_id: str, state: str) -> str:
    return "/oauth/authorize/?" + urlencode({
        "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT_URI, "state": state, "scope": "mcp",
        "code_challenge": CHALLENGE, "code_challenge_method": "S256", "resource": server + "/mcp/"})


def test_the_consent_page_in_both_languages_allows_and_denies(server, browser, alice, docs_kb):
    from selenium.webdriver.common.by import By

    from assistants.services import assistant_create
    from tests.browser import Wait

    made = assistant_create(owner=alice, name="售前助手", description="回答知库产品的价格与安装问题", kb_ids=[docs_kb.pk])
    client_id = requests.post(server + "/oauth/register/", json={
        "client_name": "Claude Desktop", "redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"},
        timeout=30).json()["client_id"]
    wait = Wait(browser, 30)
    watch_csp(browser)
    open_as(browser, server, alice, _authorize_path(server, client_id, "zh-1"))
    wait.until(lambda d: d.find_elements(By.ID, "consent-form"))
    heading = browser.find_element(By.TAG_NAME, "h1").text
    assert heading == "允许“Claude Desktop”使用你的知识？"
    assert browser.find_element(By.ID, "consent-allow").text == "允许"
    assert browser.find_element(By.ID, "consent-deny").text == "拒绝"
    choices = browser.find_element(By.ID, "consent-choices").text
    assert "售前助手" in choices and "产品文档" in choices and "应用" in choices and "知识库" in choices
    assert browser.find_element(By.ID, "consent-resource").text == server + "/mcp/"
    browser.save_screenshot("/tmp/mcp-consent-zh.png")
    assert csp_violations(browser) == []

    browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
    browser.get(server + _authorize_path(server, client_id, "en-1"))
    wait.until(lambda d: d.find_elements(By.ID, "consent-form"))
    assert browser.find_element(By.TAG_NAME, "h1").text == "Allow “Claude Desktop” to use your knowledge?"
    assert browser.find_element(By.ID, "consent-allow").text == "Allow"
    assert "Assistant" in browser.find_element(By.ID, "consent-choices").text
    browser.save_screenshot("/tmp/mcp-consent-en.png")

    # Allow the assistant: back to the client with a code, its state and the issuer (RFC 9207).
    browser.find_element(By.CSS_SELECTOR, f'input[name="target"][value="assistant:{made.pk}"]').click()
    browser.find_element(By.ID, "consent-allow").click()
    wait.until(lambda d: d.current_url.startswith(REDIRECT_URI))
    query = parse_qs(urlsplit(browser.current_url).query)
    assert query["state"] == ["en-1"] and query["iss"] == [server] and len(query["code"][0]) >= 20
    token = requests.post(server + "/oauth/token/", timeout=30, data={
        "grant_type": "authorization_code", "code": query["code"][0], "redirect_uri": REDIRECT_URI,
        "client_id": client_id, "code_verifier": VERIFIER, "resource": server + "/mcp/"}).json()
    assert token["scope"].split() == ["mcp", f"assistant:{made.pk}"] and token["token_type"] == "Bearer"

    # Deny: access_denied, no code.
    browser.get(server + _authorize_path(server, client_id, "en-2"))
    wait.until(lambda d: d.find_elements(By.ID, "consent-form"))
    browser.find_element(By.ID, "consent-deny").click()
    wait.until(lambda d: d.current_url.startswith(REDIRECT_URI))
    query = parse_qs(urlsplit(browser.current_url).query)
    assert query["error"] == ["access_denied"] and "code" not in query and query["state"] == ["en-2"]

    # The tokens page lists the sign-in (the assistant and the client), in English now.
    browser.get(server + "/account/tokens/")
    grants = wait.until(lambda d: d.find_elements(By.ID, "mcp-grant-table"))[0].text
    assert "Claude Desktop" in grants and "售前助手" in grants
    assert csp_violations(browser) == []
