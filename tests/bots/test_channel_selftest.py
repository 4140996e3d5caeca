"""A channel's test says what it verified and what it could not: a sample signed with the stored secret proves only
the callback path; the platform's own token API (Feishu, WeCom, DingTalk, the stand-ins of tests/bots/platforms.py at
the wire) says whether the credentials are its; a loopback or private callback host is named with ZHIKU_PUBLIC_URL."""
from __future__ import annotations

import pytest

from bots.services import channel_create
from core.http.address import local_host
from tests.bots.platforms import DINGTALK_APP, FEISHU_APP, WECOM_CORP
from tests.config.test_production_settings import PROD, manage

pytestmark = pytest.mark.django_db(transaction=True)

PUBLIC = "https://zhiku.example.com"


def dingtalk(assistant, secret: str, robot_code: str | None = DINGTALK_APP[0]):
    return channel_create(assistant=assistant, kind="dingtalk", name=f"钉钉-{robot_code}-{secret}",
                          settings={"robot_code": robot_code} if robot_code else {}, credentials={"app_secret": secret})


def run_test(api, channel, **headers) -> dict:
    response = api.post(f"/api/assistants/{channel.assistant_id}/channels/{channel.pk}/test/", **headers)
    assert response.status_code == 200, response.content
    return response.json()


def test_a_made_up_dingtalk_secret_is_refused_by_dingtalk_not_passed(assistant, alice, client_for, platforms, settings):
    settings.ZHIKU_PUBLIC_URL = PUBLIC
    report = run_test(client_for(alice), dingtalk(assistant, "made-up-secret"))
    # The callback takes the sample (it was signed with the same made-up secret): the path works, nothing more.
    assert report["callback"]["ok"] is True and "AppSecret" in report["callback"]["checked"]
    assert "签名" in report["callback"]["checked"] and "不能说明" in report["callback"]["checked"]
    # DingTalk's accessToken API is the judge of the secret, and it says no.
    assert report["token"]["ok"] is False and "invalidClientIdOrSecret" in report["token"]["detail"]
    assert (report["ok"], report["complete"]) == (False, False)
    assert platforms.token_requests["dingtalk"] == 0  # no token was issued
    assert "made-up-secret" not in str(report)


def test_the_right_dingtalk_secret_on_a_public_address_is_a_complete_pass(assistant, alice, client_for, platforms, settings):
    settings.ZHIKU_PUBLIC_URL = PUBLIC
    channel = dingtalk(assistant, DINGTALK_APP[1])
    report = run_test(client_for(alice), channel, HTTP_ACCEPT_LANGUAGE="en")
    assert report["ok"] is True and report["complete"] is True and report["unverified"] == []
    assert report["token"] == {"ok": True, "detail": "", "checked": "DingTalk issued an access token (accessToken) for "
                               "the RobotCode (AppKey) + AppSecret: they are right."}
    assert report["address"] == {"url": PUBLIC + channel.callback_url, "public": True, "detail": ""}
    assert platforms.token_requests["dingtalk"] == 1


def test_without_a_robot_code_the_dingtalk_secret_is_listed_as_unverified(assistant, alice, client_for, platforms, settings):
    settings.ZHIKU_PUBLIC_URL = PUBLIC
    report = run_test(client_for(alice), dingtalk(assistant, "made-up-secret", robot_code=None), HTTP_ACCEPT_LANGUAGE="en")
    assert report["ok"] is True and report["complete"] is False and report["token"] is None
    [unverified] = report["unverified"]
    assert "AppSecret" in unverified and "RobotCode" in unverified and "real message" in unverified


def test_feishu_and_wecom_say_which_secrets_only_a_real_message_verifies(assistant, alice, client_for, channel,
                                                                        platforms, settings):
    settings.ZHIKU_PUBLIC_URL = PUBLIC
    api = client_for(alice)
    feishu = run_test(api, channel("feishu", encrypt=True), HTTP_ACCEPT_LANGUAGE="en")
    assert feishu["ok"] is True and feishu["complete"] is False and feishu["token"]["ok"] is True
    assert "Verification Token + Encrypt Key" in feishu["callback"]["checked"]
    assert "tenant_access_token" in feishu["token"]["checked"] and FEISHU_APP[1] not in str(feishu)
    [unverified] = feishu["unverified"]
    assert "Verification Token + Encrypt Key" in unverified and "no API" in unverified
    plain = run_test(api, channel("feishu"), HTTP_ACCEPT_LANGUAGE="en")["unverified"][0]
    assert "stored Verification Token match" in plain and "Encrypt Key" not in plain  # none is set: none to verify
    wecom = channel("wecom")
    report = run_test(api, wecom)
    assert report["ok"] is True and report["complete"] is False and "gettoken" in report["token"]["checked"]
    assert "Token + EncodingAESKey 是否与企业微信的一致" in report["unverified"][0]
    from bots.services import channel_update

    channel_update(channel=wecom, credentials={"secret": "not-" + WECOM_CORP[1]})
    report = run_test(api, wecom)
    assert report["ok"] is False and "40001" in report["token"]["detail"]


def test_a_loopback_or_private_callback_host_is_named_with_the_setting(assistant, alice, client_for, platforms, settings):
    api = client_for(alice)
    channel = dingtalk(assistant, DINGTALK_APP[1])
    report = run_test(api, channel, HTTP_HOST="127.0.0.1:8000")
    address = report["address"]
    assert address["url"] == "http://127.0.0.1:8000" + channel.callback_url and address["public"] is False
    assert "127.0.0.1" in address["detail"] and "ZHIKU_PUBLIC_URL" in address["detail"] and "钉钉" in address["detail"]
    # Every check passed, yet the platform cannot reach the address: not a complete pass.
    assert report["ok"] is True and report["complete"] is False
    settings.ZHIKU_PUBLIC_URL = "http://192.168.1.20:8000"
    address = run_test(api, channel, HTTP_ACCEPT_LANGUAGE="en")["address"]
    assert address["public"] is False and "192.168.1.20" in address["detail"] and "DingTalk cannot reach it" in address["detail"]


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.0.1", "localhost", "LOCALHOST.", "api.localhost", "::1", "[::1]",
                                  "10.1.2.3", "172.16.0.1", "172.31.255.254", "192.168.1.5", "169.254.1.1", "100.64.0.1",
                                  "0.0.0.0", "fd00::1", "fe80::1", "::ffff:127.0.0.1", "zhiku", "nas.local", ""])
def test_local_hosts(host):
    assert local_host(host) is True


@pytest.mark.parametrize("host", ["zhiku.example.com", "8.8.8.8", "172.32.0.1", "172.15.0.1", "2001:4860:4860::8888"])
def test_public_hosts(host):
    assert local_host(host) is False


def test_the_assistant_page_warns_of_a_local_address_and_builds_on_the_public_one(assistant, alice, client, settings):
    client.force_login(alice)
    page = client.get(f"/assistants/{assistant.pk}/", HTTP_HOST="127.0.0.1:8000").content.decode()
    assert 'data-base="http://127.0.0.1:8000"' in page and "channel-address" in page and "ZHIKU_PUBLIC_URL" in page
    settings.ZHIKU_PUBLIC_URL = PUBLIC
    page = client.get(f"/assistants/{assistant.pk}/", HTTP_HOST="127.0.0.1:8000").content.decode()
    assert f'data-base="{PUBLIC}"' in page and "channel-address" not in page


@pytest.mark.django_db(transaction=False)
def test_a_public_url_that_is_not_an_address_stops_the_start(tmp_path):
    result = manage(tmp_path, "check", **PROD, ZHIKU_PUBLIC_URL="zhiku.example.com")
    assert result.returncode != 0 and "ZHIKU_PUBLIC_URL must be an http(s) address" in result.stderr
