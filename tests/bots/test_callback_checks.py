"""What every callback is held to before anything is stored (issue 45 item 3): Feishu's signature before anything is
decrypted, one byte-identical refusal for every check that fails on every platform (no padding oracle), the
timestamps' windows, a DingTalk (timestamp, sign) pair taken with one body only, and each channel's event rate
(429, Retry-After, one audit entry a minute), counted in Redis and, without it, in the process."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import time
import uuid
from datetime import timedelta

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from django.utils import timezone

from audit.models import AuditEntry
from bots.models import BotChannel, BotEvent, BotSignatureUse
from bots.platforms import feishu
from core.audit import Action
from tests.bots.conftest import DINGTALK_SECRET, FEISHU_KEY, FEISHU_TOKEN, WECOM_AES_KEY, WECOM_TOKEN
from tests.bots.platforms import (
    WECOM_CORP,
    dingtalk_headers,
    dingtalk_message,
    feishu_encrypt,
    feishu_headers,
    feishu_message,
    feishu_url_check,
    wecom_encrypt,
    wecom_envelope,
    wecom_message_xml,
    wecom_query,
)
from tests.helpers import redis_available

pytestmark = pytest.mark.django_db(transaction=True)
PRICE = "知库专业版的价格是多少？"
REDIS_URL = "redis://127.0.0.1:6379/15"


def post(client, channel, body: bytes, **headers):
    return client.post(channel.callback_url, body, content_type="application/json", **headers)


def encrypted(event: dict, key: str = FEISHU_KEY) -> bytes:
    return json.dumps({"encrypt": feishu_encrypt(key, json.dumps(event, ensure_ascii=False).encode())}).encode()


def feishu_event(n: int, **kwargs) -> dict:
    return feishu_message(PRICE, token=FEISHU_TOKEN, event_id=f"ev-{n}", message_id=f"om_{n}", **kwargs)


def bad_padding(key: str) -> bytes:
    """An ``encrypt`` that decrypts with the right key to two blocks ending in 0x00: PKCS#7 padding no key makes."""
    iv = os.urandom(16)
    encryptor = Cipher(algorithms.AES(hashlib.sha256(key.encode()).digest()), modes.CBC(iv)).encryptor()
    cipher = encryptor.update(b'{"type": "x"}' + b" " * 18 + b"\x00") + encryptor.finalize()
    return json.dumps({"encrypt": base64.b64encode(iv + cipher).decode()}).encode()


@pytest.fixture
def decrypt_calls(monkeypatch):
    """Every ``feishu_decrypt`` the callback makes."""
    calls: list[str] = []
    real = feishu.feishu_decrypt

    def spy(key: str, text: str) -> bytes:
        calls.append(text)
        return real(key, text)

    monkeypatch.setattr(feishu, "feishu_decrypt", spy)
    return calls


def settled(channel) -> None:
    """The channel last changed an hour ago: Feishu's unsigned URL check is no longer taken."""
    BotChannel.objects.filter(pk=channel.pk).update(updated_at=timezone.now() - timedelta(hours=1))


# --- Feishu: the signature first -----------------------------------------------------------------------------------

def test_an_unsigned_or_badly_signed_feishu_event_is_refused_and_never_decrypted(client, channel, platforms,
                                                                                decrypt_calls):
    secured = channel("feishu", encrypt=True)
    settled(secured)
    body = encrypted(feishu_event(1))
    assert post(client, secured, body).status_code == 403
    assert post(client, secured, body, **feishu_headers("another-key", body)).status_code == 403
    headers = feishu_headers(FEISHU_KEY, body)
    del headers["HTTP_X_LARK_SIGNATURE"]
    assert post(client, secured, body, **headers).status_code == 403
    assert post(client, secured, feishu_url_check(FEISHU_KEY, FEISHU_TOKEN, "c")).status_code == 403
    assert decrypt_calls == [] and not BotEvent.objects.exists() and platforms.replies == []
    # Signed, it is decrypted once and answered.
    assert post(client, secured, body, **feishu_headers(FEISHU_KEY, body)).status_code == 200
    assert len(decrypt_calls) == 1 and BotEvent.objects.get().event_id == "ev-1"


def test_unsigned_after_a_change_only_the_url_check_passes(client, channel, platforms):
    secured = channel("feishu", encrypt=True)
    assert post(client, secured, feishu_url_check(FEISHU_KEY, FEISHU_TOKEN, "c1")).json() == {"challenge": "c1"}
    assert post(client, secured, feishu_url_check(FEISHU_KEY, "wrong-token", "c1")).status_code == 403
    # An event (not the URL check) needs its signature, even in the window.
    assert post(client, secured, encrypted(feishu_event(1))).status_code == 403
    assert not BotEvent.objects.exists() and platforms.replies == []


def test_every_feishu_failure_is_one_byte_identical_refusal(client, channel, platforms):
    secured = channel("feishu", encrypt=True)
    settled(secured)

    def signed(body: bytes, timestamp: str | None = None):
        return post(client, secured, body, **feishu_headers(FEISHU_KEY, body, timestamp))

    good = encrypted(feishu_event(1))
    now = int(time.time())
    answers = {
        "unsigned": post(client, secured, good),
        "bad signature": post(client, secured, good, **feishu_headers("another-key", good)),
        "bad padding": signed(bad_padding(FEISHU_KEY)),
        "good padding, not JSON": signed(json.dumps({"encrypt": feishu_encrypt(FEISHU_KEY, b"not json")}).encode()),
        "not base64": signed(b'{"encrypt": "%%%"}'),
        "not encrypted": signed(json.dumps(feishu_event(2)).encode()),
        "outer body not JSON": signed(b"{not json"),
        "wrong token": signed(encrypted({**feishu_event(3), "header": {**feishu_event(3)["header"], "token": "x"}})),
        "stale": signed(good, str(now - 3600)),
        "future": signed(good, str(now + 3600)),
        "timestamp not a number": signed(good, "soon"),
    }
    first = answers["bad padding"]
    assert first.status_code == 403 and first.json()["error"]["code"] == "bot_signature_invalid"
    for name, answer in answers.items():
        assert (answer.status_code, answer.content) == (first.status_code, first.content), name
    message = first.json()["error"]["message"]
    assert "padding" not in message.lower() and "decrypt" not in message.lower() and ":" not in message
    assert not BotEvent.objects.exists() and platforms.replies == []
    assert signed(good).status_code == 200 and BotEvent.objects.count() == 1


# --- the windows ----------------------------------------------------------------------------------------------------

def test_feishu_timestamps_outside_the_window_are_refused(client, channel, platforms, settings):
    settings.ZHIKU_BOTS_CALLBACK_WINDOW_SECONDS = 300
    secured = channel("feishu", encrypt=True)
    now = int(time.time())
    for n, offset in enumerate([-301, 301, 946684800 - now, 10 * 365 * 86400], start=1):  # 946684800: 2000-01-01
        body = encrypted(feishu_event(n))
        assert post(client, secured, body, **feishu_headers(FEISHU_KEY, body, str(now + offset))).status_code == 403
    body = encrypted(feishu_event(9))
    assert post(client, secured, body, **feishu_headers(FEISHU_KEY, body, str(now - 200))).status_code == 200
    assert list(BotEvent.objects.values_list("event_id", flat=True)) == ["ev-9"]


def test_a_plain_feishu_event_dated_before_its_id_is_forgotten_or_ahead_is_refused(client, channel, platforms,
                                                                                   settings):
    """Without an Encrypt Key nothing is signed: the event's create_time keeps a verbatim replay out once the event
    id is no longer kept (ZHIKU_BOTS_DEDUP_DAYS), and an event dated ahead out; Feishu's retries (hours) still in."""
    settings.ZHIKU_BOTS_DEDUP_DAYS = 7
    plain = channel("feishu")
    now_ms = int(time.time() * 1000)

    def dated(n: int, created_ms: int):
        event = feishu_event(n)
        event["header"]["create_time"] = str(created_ms)
        return post(client, plain, json.dumps(event).encode())

    assert dated(1, 946684800000).status_code == 403  # 2000-01-01
    assert dated(2, now_ms - 8 * 86400_000).status_code == 403
    assert dated(3, now_ms + 10 * 365 * 86400_000).status_code == 403
    assert dated(4, now_ms + 3600_000).status_code == 403
    assert dated(5, now_ms - 6 * 3600_000).status_code == 200  # Feishu's last retry comes 6 h after the first try
    assert list(BotEvent.objects.values_list("event_id", flat=True)) == ["ev-5"]


def test_wecom_timestamps_outside_the_window_are_refused(client, channel, platforms):
    app = channel("wecom")
    now = int(time.time())
    echo = wecom_encrypt(WECOM_AES_KEY, b"echo-1", WECOM_CORP[0])
    for stamp in ("946684800", str(now - 301), str(now + 301), str(now + 10 * 365 * 86400)):
        assert client.get(app.callback_url, wecom_query(WECOM_TOKEN, echo, echo=True, timestamp=stamp)).status_code == 403
        message = wecom_encrypt(WECOM_AES_KEY, wecom_message_xml(PRICE, user="zhangsan", msg_id=stamp), WECOM_CORP[0])
        query = "&".join(f"{k}={v}" for k, v in wecom_query(WECOM_TOKEN, message, timestamp=stamp).items())
        assert client.post(f"{app.callback_url}?{query}", wecom_envelope(message), content_type="text/xml").status_code == 403
    assert not BotEvent.objects.exists() and platforms.replies == []
    fresh = client.get(app.callback_url, wecom_query(WECOM_TOKEN, echo, echo=True, timestamp=str(now - 200)))
    assert fresh.status_code == 200 and fresh.content == b"echo-1"


def test_every_wecom_failure_is_one_byte_identical_refusal(client, channel, platforms):
    app = channel("wecom")

    def send(encrypted: str, envelope: bytes | None = None, token: str = WECOM_TOKEN, **query):
        params = {**wecom_query(token, encrypted), **query}
        return client.post(app.callback_url + "?" + "&".join(f"{k}={v}" for k, v in params.items()),
                           envelope if envelope is not None else wecom_envelope(encrypted), content_type="text/xml")

    good = wecom_encrypt(WECOM_AES_KEY, wecom_message_xml(PRICE, user="zhangsan", msg_id="1"), WECOM_CORP[0])
    bomb = b'<!DOCTYPE x [<!ENTITY a "aaaa">]><xml><Encrypt>&a;</Encrypt></xml>'
    answers = {
        "bad signature": send(good, token="another-token"),
        "cannot be decrypted": send(base64.b64encode(os.urandom(64)).decode()),
        "another corp": send(wecom_encrypt(WECOM_AES_KEY, wecom_message_xml(PRICE, user="u", msg_id="2"), "wwother")),
        "message not XML": send(wecom_encrypt(WECOM_AES_KEY, b"<xml><unclosed>", WECOM_CORP[0])),
        "envelope not XML": send(good, b"not xml"),
        "a DTD": send(good, bomb),
        "stale": send(good, timestamp="946684800"),
    }
    first = answers["cannot be decrypted"]
    assert first.status_code == 403 and first.json()["error"]["code"] == "bot_signature_invalid"
    for name, answer in answers.items():
        assert (answer.status_code, answer.content) == (first.status_code, first.content), name
    assert not BotEvent.objects.exists() and platforms.replies == []


# --- DingTalk: a signature once -------------------------------------------------------------------------------------

def test_a_dingtalk_signature_replayed_with_another_body_is_refused(client, channel, platforms):
    robot = channel("dingtalk")
    webhook = f"{platforms.url}/robot/sendBySession?session=s1"
    headers = dingtalk_headers(DINGTALK_SECRET)
    first = dingtalk_message(PRICE, webhook=webhook, msg_id="msg-1")

    def ding(body: dict, signed: dict):
        return client.post(robot.callback_url, json.dumps(body, ensure_ascii=False), content_type="application/json",
                           **signed)

    assert ding(first, headers).status_code == 200 and len(platforms.replies) == 1
    # The captured pair with another question, another id, a sessionWebhook of the attacker's choosing: refused.
    forged = dingtalk_message("安装需要什么？", webhook=f"{platforms.url}/robot/sendBySession?session=evil",
                              msg_id="msg-2")
    refused = ding(forged, headers)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "bot_signature_invalid"
    # The same body again is DingTalk's retry: acknowledged, answered once.
    assert ding(first, headers).status_code == 200
    assert list(BotEvent.objects.values_list("event_id", flat=True)) == ["msg-1"] and len(platforms.replies) == 1
    # A fresh signature carries the new message.
    assert ding(forged, dingtalk_headers(DINGTALK_SECRET, int(time.time() * 1000) + 1)).status_code == 200
    assert BotEvent.objects.count() == 2 and BotSignatureUse.objects.filter(channel=robot).count() == 2


def test_every_dingtalk_failure_is_one_byte_identical_refusal_and_the_hour_holds_both_ways(client, channel,
                                                                                          platforms):
    robot = channel("dingtalk")
    webhook = f"{platforms.url}/robot/sendBySession?session=s"
    body = json.dumps(dingtalk_message(PRICE, webhook=webhook, msg_id="m"))
    other = json.dumps(dingtalk_message("安装需要什么？", webhook=webhook, msg_id="n"))
    now = int(time.time() * 1000)

    def ding(raw: str | bytes, signed: dict):
        return client.post(robot.callback_url, raw, content_type="application/json", **signed)

    used = dingtalk_headers(DINGTALK_SECRET, now - 5)
    assert ding(body, used).status_code == 200
    answers = {
        "bad sign": ding(body, dingtalk_headers("not-the-secret")),
        "stale": ding(body, dingtalk_headers(DINGTALK_SECRET, now - 3601_000)),
        "ahead": ding(body, dingtalk_headers(DINGTALK_SECRET, now + 3601_000)),
        "replayed": ding(other, used),
        "not JSON": ding(b"{not json", dingtalk_headers(DINGTALK_SECRET, now - 7)),
        "no headers": ding(body, {}),
    }
    first = answers["not JSON"]
    assert first.status_code == 403 and first.json()["error"]["code"] == "bot_signature_invalid"
    for name, answer in answers.items():
        assert (answer.status_code, answer.content) == (first.status_code, first.content), name


# --- each channel's rate ----------------------------------------------------------------------------------------------

@pytest.fixture(params=["redis", "process"])
def counters(request, settings):
    """The rate's counters in Redis (a prefix of this test's own) or, without Redis, in this process."""
    if request.param == "redis":
        if not redis_available(REDIS_URL):
            pytest.skip("needs Redis at 127.0.0.1:6379 (make test starts one)")
        prefix = f"test-{uuid.uuid4().hex[:12]}"
        settings.REDIS_URL = REDIS_URL
        settings.ZHIKU_REDIS_PREFIX = prefix
        settings.CACHES = {"default": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": REDIS_URL,
                                       "KEY_PREFIX": prefix}}
    else:
        settings.REDIS_URL = ""
    return request.param


def test_a_channel_over_its_rate_gets_429_with_retry_after_and_one_audit_entry(client, channel, platforms, settings,
                                                                               monkeypatch, counters):
    monkeypatch.setattr(time, "time", lambda: 1_800_000_010.0)  # one minute for the whole test, 50 s left
    settings.ZHIKU_BOTS_CHANNEL_RATE_LIMIT = 3
    plain, other = channel("feishu"), channel("feishu", bot_open_id="ou_bot")
    check = json.dumps({"challenge": "c", "token": FEISHU_TOKEN, "type": "url_verification"}).encode()
    forged = json.dumps({"challenge": "c", "token": "wrong", "type": "url_verification"}).encode()
    answers = [post(client, plain, forged)] + [post(client, plain, check) for _ in range(5)]
    assert [a.status_code for a in answers] == [403, 200, 200, 429, 429, 429]  # refused tries count too
    error = answers[3].json()["error"]
    assert error["code"] == "bot_rate_limited" and error["retry_after"] == 50 and answers[3]["Retry-After"] == "50"
    assert "3" in error["message"] and answers[4].content == answers[3].content
    [entry] = AuditEntry.objects.filter(action=Action.BOT_CHANNEL_RATE_LIMITED)
    assert entry.object_id == str(plain.pk) and entry.changes["limit"] == 3 and entry.actor is None
    # Another channel has its own count; the next minute starts afresh (and may write its own entry).
    assert post(client, other, check).status_code == 200
    monkeypatch.setattr(time, "time", lambda: 1_800_000_070.0)
    assert post(client, plain, check).status_code == 200
    assert AuditEntry.objects.filter(action=Action.BOT_CHANNEL_RATE_LIMITED).count() == 1
