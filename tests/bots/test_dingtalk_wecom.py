"""DingTalk and WeCom: the callbacks' signatures refused when wrong (and DingTalk's stale timestamps), a message
answered and replied at the local platform (DingTalk's sessionWebhook, WeCom's message/send with its access token),
WeCom's URL check echoing the decrypted echostr, a sessionWebhook on another host never called."""
from __future__ import annotations

import json
import time

import pytest
from defusedxml import ElementTree
from defusedxml.common import DTDForbidden

from bots.models import BotEvent, EventStatus
from chat.models import Conversation
from tests.bots.conftest import DINGTALK_SECRET, WECOM_AES_KEY, WECOM_TOKEN
from tests.bots.platforms import (
    WECOM_CORP,
    dingtalk_headers,
    dingtalk_message,
    wecom_encrypt,
    wecom_envelope,
    wecom_message_xml,
    wecom_query,
)

pytestmark = pytest.mark.django_db(transaction=True)
PRICE = "知库专业版的价格是多少？"


def ding(client, channel, body: dict, headers: dict):
    return client.post(channel.callback_url, json.dumps(body, ensure_ascii=False), content_type="application/json",
                       **headers)


def test_dingtalk_refuses_a_bad_sign_and_a_stale_timestamp_and_replies_on_the_session_webhook(client, channel, platforms):
    robot = channel("dingtalk")
    webhook = f"{platforms.url}/robot/sendBySession?session=s3ss10n"
    body = dingtalk_message(PRICE, webhook=webhook, msg_id="msg-1")
    bad = ding(client, robot, body, dingtalk_headers("not-the-secret"))
    assert bad.status_code == 403 and bad.json()["error"]["code"] == "bot_signature_invalid"
    stale = ding(client, robot, body, dingtalk_headers(DINGTALK_SECRET, int(time.time() * 1000) - 2 * 3600_000))
    assert stale.status_code == 403
    assert not BotEvent.objects.exists() and platforms.replies == []
    good = ding(client, robot, body, dingtalk_headers(DINGTALK_SECRET))
    assert good.status_code == 200
    [reply] = platforms.replies_of("dingtalk")
    assert reply["session"] == "s3ss10n" and reply["body"]["msgtype"] == "markdown"
    text = reply["body"]["markdown"]["text"]
    assert "9800" in text and "[1]" in text
    assert BotEvent.objects.get().status == EventStatus.REPLIED
    assert Conversation.objects.get().channel == "dingtalk"
    again = ding(client, robot, body, dingtalk_headers(DINGTALK_SECRET))  # DingTalk's retry of the same msgId
    assert again.status_code == 200 and len(platforms.replies) == 1


def test_a_session_webhook_on_another_host_is_never_called(client, channel, platforms, settings):
    settings.ZHIKU_BOTS_DINGTALK_WEBHOOK_HOSTS = ("oapi.dingtalk.com",)
    robot = channel("dingtalk")
    body = dingtalk_message(PRICE, webhook=f"{platforms.url}/robot/sendBySession?session=x", msg_id="msg-2")
    assert ding(client, robot, body, dingtalk_headers(DINGTALK_SECRET)).status_code == 200
    event = BotEvent.objects.get()
    assert event.status == EventStatus.FAILED and "ZHIKU_BOTS_DINGTALK_WEBHOOK_HOSTS" in event.error
    assert platforms.replies == []


def test_wecom_url_verification_echoes_the_decrypted_echostr(client, channel, platforms):
    app = channel("wecom")
    echo = wecom_encrypt(WECOM_AES_KEY, b"echo-4821", WECOM_CORP[0])
    answer = client.get(app.callback_url, wecom_query(WECOM_TOKEN, echo, echo=True))
    assert answer.status_code == 200 and answer.content == b"echo-4821"
    forged = client.get(app.callback_url, wecom_query("another-token", echo, echo=True))
    assert forged.status_code == 403 and forged.json()["error"]["code"] == "bot_signature_invalid"
    other_corp = wecom_encrypt(WECOM_AES_KEY, b"echo-4821", "wwanothercorp")
    assert client.get(app.callback_url, wecom_query(WECOM_TOKEN, other_corp, echo=True)).status_code == 403


def test_a_wecom_message_is_decrypted_and_replied_through_message_send(client, channel, platforms):
    app = channel("wecom")
    encrypted = wecom_encrypt(WECOM_AES_KEY, wecom_message_xml(PRICE, user="zhangsan", msg_id="7001"), WECOM_CORP[0])
    bad = client.post(app.callback_url + "?" + "&".join(f"{k}={v}" for k, v in wecom_query("x", encrypted).items()),
                      wecom_envelope(encrypted), content_type="text/xml")
    assert bad.status_code == 403 and platforms.replies == []
    query = "&".join(f"{k}={v}" for k, v in wecom_query(WECOM_TOKEN, encrypted).items())
    ack = client.post(f"{app.callback_url}?{query}", wecom_envelope(encrypted), content_type="text/xml")
    assert ack.status_code == 200
    [reply] = platforms.replies_of("wecom")
    assert reply["body"]["touser"] == "zhangsan" and reply["body"]["agentid"] == 1000002
    assert reply["body"]["msgtype"] == "markdown" and "9800" in reply["body"]["markdown"]["content"]
    assert len(reply["body"]["markdown"]["content"].encode()) <= 2048
    assert platforms.token_requests["wecom"] == 1
    # An expired or revoked token (errcode 40014) is fetched again and the message sent once.
    platforms.revoke_tokens()
    second = wecom_encrypt(WECOM_AES_KEY, wecom_message_xml("安装需要什么？", user="zhangsan", msg_id="7002"), WECOM_CORP[0])
    query = "&".join(f"{k}={v}" for k, v in wecom_query(WECOM_TOKEN, second).items())
    client.post(f"{app.callback_url}?{query}", wecom_envelope(second), content_type="text/xml")
    assert platforms.token_requests["wecom"] == 2 and len(platforms.replies_of("wecom")) == 2
    assert Conversation.objects.get().channel == "wecom"  # the follow-up joined the user's conversation


def test_an_xml_bomb_is_refused_before_anything_is_expanded(client, channel, platforms):
    app = channel("wecom")
    bomb = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]><xml><Encrypt>&b;</Encrypt></xml>'
    with pytest.raises(DTDForbidden):
        ElementTree.fromstring(bomb, forbid_dtd=True)
    answer = client.post(f"{app.callback_url}?msg_signature=x&timestamp=1&nonce=2", bomb, content_type="text/xml")
    assert answer.status_code == 403 and answer.json()["error"]["code"] == "bot_signature_invalid"  # the one refusal
