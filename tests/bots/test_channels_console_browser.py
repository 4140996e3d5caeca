"""An assistant's chat-bot channels in its console page, in headless Chromium against daphne: an owner adds a Feishu
channel with the fields its kind asks for, sees the callback URL to paste, and 「测试」 sends a signed sample event
through the real callback and fetches a tenant token from the Feishu server on loopback (tests/bots/platforms.py),
and says what it could not verify (the Verification Token) and that the loopback address cannot be reached; a DingTalk
channel's made-up secret fails at DingTalk's accessToken API, its right one on a public address (ZHIKU_PUBLIC_URL) passes."""
from __future__ import annotations

import pytest

from tests.bots.platforms import DINGTALK_APP, FEISHU_APP, Platforms
from tests.browser import CHROMEDRIVER, CHROMIUM, csp_violations, daphne, open_as, selenium, watch_csp

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def feishu_site(tmp_path):
    """daphne whose Feishu API is the loopback server (treated as a public address, as in tests/bots/conftest.py)."""
    platforms = Platforms()
    try:
        with daphne(tmp_path / "daphne.log", ZHIKU_BOTS_FEISHU_BASE_URL=platforms.url,
                    ZHIKU_SOURCES_PUBLIC_TEST_ADDRESSES="127.0.0.1", ZHIKU_SOURCES_ALLOW_PRIVATE="false") as url:
            yield url, platforms
    finally:
        platforms.close()


@pytest.fixture
def public_site(tmp_path):
    """daphne whose DingTalk API is the loopback server and whose public address is ZHIKU_PUBLIC_URL."""
    platforms = Platforms()
    try:
        with daphne(tmp_path / "daphne.log", ZHIKU_BOTS_DINGTALK_BASE_URL=platforms.url, ZHIKU_PUBLIC_URL=PUBLIC,
                    ZHIKU_SOURCES_PUBLIC_TEST_ADDRESSES="127.0.0.1", ZHIKU_SOURCES_ALLOW_PRIVATE="false") as url:
            yield url, platforms
    finally:
        platforms.close()


PUBLIC = "https://zhiku.example.com"


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_an_owner_adds_a_feishu_channel_and_tests_it(feishu_site, browser, alice, assistant, language):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from bots.models import BotChannel
    from tests.browser import Wait

    server, platforms = feishu_site
    wait = Wait(browser, 60)
    watch_csp(browser)
    open_as(browser, server, alice, "/static/zhiku/console.css")
    browser.add_cookie({"name": "django_language", "value": language, "path": "/"})
    browser.get(f"{server}/assistants/{assistant.pk}/")
    section = wait.until(lambda d: d.find_element(By.ID, "channels"))
    wait.until(lambda d: not section.find_element(By.CSS_SELECTOR, ".channel-rows").text.endswith("…"))

    section.find_element(By.CSS_SELECTOR, ".channel-add summary").click()
    Select(section.find_element(By.CSS_SELECTOR, ".channel-kind")).select_by_value("feishu")
    wait.until(lambda d: section.find_elements(By.CSS_SELECTOR, 'input[name="app_id"]'))
    section.find_element(By.CSS_SELECTOR, ".channel-name").send_keys("客服群")
    section.find_element(By.CSS_SELECTOR, 'input[name="app_id"]').send_keys(FEISHU_APP[0])
    section.find_element(By.CSS_SELECTOR, 'input[name="app_secret"]').send_keys(FEISHU_APP[1])
    section.find_element(By.CSS_SELECTOR, 'input[name="verification_token"]').send_keys("verify-me")
    assert section.find_element(By.CSS_SELECTOR, 'input[name="app_secret"]').get_attribute("type") == "password"
    browser.set_window_size(1280, browser.execute_script("return document.documentElement.scrollHeight") + 120)
    browser.save_screenshot(f"/tmp/bots-console-form-{language}.png")
    section.find_element(By.CSS_SELECTOR, ".channel-create").click()

    wait.until(lambda d: section.find_elements(By.CSS_SELECTOR, ".channel-rows tr[data-channel-id]"))
    channel = BotChannel.objects.get(assistant=assistant, name="客服群")
    assert channel.kind == "feishu" and channel.settings == {"app_id": FEISHU_APP[0]}
    url = section.find_element(By.CSS_SELECTOR, ".channel-url").text
    assert url == server + channel.callback_url
    assert FEISHU_APP[1] not in browser.page_source and "verify-me" not in browser.page_source

    zh = language == "zh-hans"
    # Opened at 127.0.0.1: the section says the platforms cannot reach it, and names the setting.
    notice = section.find_element(By.CSS_SELECTOR, ".channel-address").text
    assert "ZHIKU_PUBLIC_URL" in notice and server in notice
    assert ("本机或内网地址" if zh else "a loopback or private address") in notice
    section.find_element(By.CSS_SELECTOR, ".channel-test").click()
    status = section.find_element(By.CSS_SELECTOR, ".channel-status")
    wait.until(lambda d: status.get_attribute("data-ok") in ("true", "false"))
    assert status.get_attribute("data-ok") == "true" and status.get_attribute("data-complete") == "false", status.text
    # No check failed, yet not 「测试通过」: the Verification Token only Feishu can verify, the address is loopback.
    assert ("测试通过" if zh else "the test passed") not in status.text
    assert ("不是每一项都能验证" if zh else "not everything could be verified") in status.text
    checks = {c.get_attribute("data-state"): c.text for c in status.find_elements(By.CSS_SELECTOR, ".channel-check")}
    assert set(checks) == {"ok", "unverified", "warning"}, checks
    assert "Verification Token" in checks["unverified"] and "ZHIKU_PUBLIC_URL" in checks["warning"]
    assert ("签发了访问令牌" if zh else "issued an access token") in status.text
    assert platforms.token_requests["feishu"] == 1
    browser.set_window_size(1280, browser.execute_script("return document.documentElement.scrollHeight") + 120)
    browser.save_screenshot(f"/tmp/bots-console-{language}.png")
    section.screenshot(f"/tmp/bots-console-section-{language}.png")

    # A wrong secret: the test says which step failed, in words, without the secret.
    from bots.services import channel_update

    channel_update(channel=BotChannel.objects.get(pk=channel.pk), credentials={"app_secret": "not-the-secret"})
    section.find_element(By.CSS_SELECTOR, ".channel-test").click()
    wait.until(lambda d: status.get_attribute("data-ok") == "false")
    assert "not-the-secret" not in status.text
    assert csp_violations(browser) == []


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_a_made_up_dingtalk_secret_fails_and_the_right_one_passes(public_site, browser, alice, assistant, language):
    from selenium.webdriver.common.by import By

    from bots.services import channel_create, channel_update
    from tests.browser import Wait

    server, platforms = public_site
    zh = language == "zh-hans"
    channel = channel_create(assistant=assistant, kind="dingtalk", name="钉钉群", settings={"robot_code": DINGTALK_APP[0]},
                             credentials={"app_secret": "made-up-secret"})
    wait = Wait(browser, 60)
    watch_csp(browser)
    open_as(browser, server, alice, "/static/zhiku/console.css")
    browser.add_cookie({"name": "django_language", "value": language, "path": "/"})
    browser.get(f"{server}/assistants/{assistant.pk}/")
    section = wait.until(lambda d: d.find_element(By.ID, "channels"))
    wait.until(lambda d: section.find_elements(By.CSS_SELECTOR, ".channel-rows tr[data-channel-id]"))
    assert section.find_element(By.CSS_SELECTOR, ".channel-url").text == PUBLIC + channel.callback_url
    assert not section.find_elements(By.CSS_SELECTOR, ".channel-address")  # a public address: no notice

    status = section.find_element(By.CSS_SELECTOR, ".channel-status")
    section.find_element(By.CSS_SELECTOR, ".channel-test").click()
    wait.until(lambda d: status.get_attribute("data-ok") in ("true", "false"))
    assert status.get_attribute("data-ok") == "false", status.text
    assert ("测试未通过" if zh else "the test failed") in status.text and "invalidClientIdOrSecret" in status.text
    assert ("回调路径可用" if zh else "the callback path works") in status.text  # what the callback check did show
    assert "made-up-secret" not in status.text
    browser.set_window_size(1280, browser.execute_script("return document.documentElement.scrollHeight") + 120)
    section.screenshot(f"/tmp/bots-dingtalk-made-up-{language}.png")

    channel_update(channel=channel, credentials={"app_secret": DINGTALK_APP[1]})
    section.find_element(By.CSS_SELECTOR, ".channel-test").click()
    wait.until(lambda d: status.get_attribute("data-complete") == "true")
    assert ("测试通过" if zh else "the test passed") in status.text and platforms.token_requests["dingtalk"] == 1
    assert {c.get_attribute("data-state") for c in status.find_elements(By.CSS_SELECTOR, ".channel-check")} == {"ok"}
    section.screenshot(f"/tmp/bots-dingtalk-right-{language}.png")
    assert csp_violations(browser) == []
