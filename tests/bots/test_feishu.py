"""Feishu: URL verification (plain and encrypted, unsigned only after a change), the Verification Token and
X-Lark-Signature checked, a message answered by the assistant and replied as a card at the local Feishu open
platform, group messages only when the bot is mentioned, a retried event answered once, the tenant token cached and
fetched again after expiry or refusal."""
from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from assistants.usage import assistant_usage
from bots.models import BotChannel, BotEvent, EventStatus
from bots.services import channel_update
from chat.models import Conversation, Message, Role
from knowledge.models import Document
from tests.bots.conftest import FEISHU_KEY, FEISHU_TOKEN
from tests.bots.platforms import feishu_encrypt, feishu_headers, feishu_message, feishu_url_check

pytestmark = pytest.mark.django_db(transaction=True)
PRICE = "知库专业版的价格是多少？"


def post(client, channel, body: dict | bytes, **headers):
    data = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode()
    return client.post(channel.callback_url, data, content_type="application/json", **headers)


def message(text: str, n: int, **kwargs) -> dict:
    return feishu_message(text, token=FEISHU_TOKEN, event_id=f"ev-{n}", message_id=f"om_{n}", **kwargs)


def card_text(reply: dict) -> str:
    return json.dumps(reply["card"], ensure_ascii=False)


def test_url_verification_answers_the_challenge_and_a_wrong_token_is_refused(client, channel, platforms):
    plain = channel("feishu")
    answer = post(client, plain, {"challenge": "ch-123", "token": FEISHU_TOKEN, "type": "url_verification"})
    assert answer.status_code == 200 and answer.json() == {"challenge": "ch-123"}
    refused = post(client, plain, {"challenge": "ch-123", "token": "wrong", "type": "url_verification"})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "bot_signature_invalid"
    forged = post(client, plain, feishu_message(PRICE, token="wrong", event_id="ev-1", message_id="om_1"))
    assert forged.status_code == 403 and not BotEvent.objects.exists() and platforms.replies == []


def test_encrypted_url_verification_is_answered_unsigned_only_after_a_change_and_signed_always(client, channel,
                                                                                              platforms):
    secured = channel("feishu", encrypt=True)
    body = feishu_url_check(FEISHU_KEY, FEISHU_TOKEN, "ch-enc")
    # Feishu sends its URL check unsigned: taken in the window after the channel was added or changed.
    assert post(client, secured, body).json() == {"challenge": "ch-enc"}
    signed = post(client, secured, body, **feishu_headers(FEISHU_KEY, body))
    assert signed.status_code == 200 and signed.json() == {"challenge": "ch-enc"}
    assert post(client, secured, body, **feishu_headers("another-key", body)).status_code == 403
    wrong_key = feishu_url_check("another-key", FEISHU_TOKEN, "ch-enc")
    assert post(client, secured, wrong_key).status_code == 403
    # With an Encrypt Key set, a plain event is refused.
    assert post(client, secured, {"challenge": "x", "token": FEISHU_TOKEN, "type": "url_verification"}).status_code == 403
    # Long after the last change, the unsigned check is refused; a signed one still passes; saving reopens it.
    BotChannel.objects.filter(pk=secured.pk).update(updated_at=timezone.now() - timedelta(hours=1))
    assert post(client, secured, body).status_code == 403
    assert post(client, secured, body, **feishu_headers(FEISHU_KEY, body)).json() == {"challenge": "ch-enc"}
    channel_update(channel=BotChannel.objects.get(pk=secured.pk), enabled=True)
    assert post(client, secured, body).json() == {"challenge": "ch-enc"}


def test_a_direct_message_is_answered_with_a_card_holding_the_answer_and_its_citation(client, channel, platforms, docs_kb):
    feishu = channel("feishu", encrypt=True)
    body = json.dumps({"encrypt": feishu_encrypt(FEISHU_KEY, json.dumps(message(PRICE, 1)).encode())}).encode()
    ack = post(client, feishu, body, **feishu_headers(FEISHU_KEY, body))
    assert ack.status_code == 200 and ack.json() == {}
    [reply] = platforms.replies_of("feishu")
    assert reply["message_id"] == "om_1" and reply["body"]["msg_type"] == "interactive"
    text = card_text(reply)
    title = Document.objects.get(kb=docs_kb, source_name="pro.md").title
    assert "9800" in text and title in text and "lark_md" in text
    event = BotEvent.objects.get()
    assert event.status == EventStatus.REPLIED and event.question == PRICE and event.error == ""
    conversation = Conversation.objects.get()
    assert conversation.channel == "feishu" and conversation.assistant_id == feishu.assistant_id
    assert assistant_usage(feishu.assistant)["conversations_by_channel"] == {"feishu": 1}
    # A follow-up in the same chat continues its conversation.
    follow_up = json.dumps({"encrypt": feishu_encrypt(FEISHU_KEY, json.dumps(message("安装需要什么？", 2)).encode())})
    post(client, feishu, follow_up.encode(), **feishu_headers(FEISHU_KEY, follow_up.encode()))
    assert Conversation.objects.count() == 1 and Message.objects.filter(role=Role.USER).count() == 2
    assert len(platforms.replies_of("feishu")) == 2


def test_a_group_message_is_answered_only_when_the_bot_is_mentioned(client, channel, platforms):
    feishu = channel("feishu", bot_open_id="ou_bot")
    post(client, feishu, message(PRICE, 1, chat_type="group"))
    someone = [{"key": "@_user_1", "id": {"open_id": "ou_someone"}, "name": "李四"}]
    post(client, feishu, message("@_user_1 " + PRICE, 2, chat_type="group", mentions=someone))
    assert platforms.replies == [] and not BotEvent.objects.exists()
    bot = [{"key": "@_user_1", "id": {"open_id": "ou_bot"}, "name": "知库"}]
    ack = post(client, feishu, message("@_user_1 " + PRICE, 3, chat_type="group", mentions=bot))
    assert ack.status_code == 200 and BotEvent.objects.get().question == PRICE
    assert "9800" in card_text(platforms.replies_of("feishu")[0])


def test_a_retried_event_is_acknowledged_and_answered_once(client, channel, platforms):
    feishu = channel("feishu")
    first, again = post(client, feishu, message(PRICE, 7)), post(client, feishu, message(PRICE, 7))
    assert first.status_code == again.status_code == 200
    assert len(platforms.replies) == 1 and BotEvent.objects.count() == 1
    assert Message.objects.filter(role=Role.USER).count() == 1


def test_the_tenant_token_is_cached_and_fetched_again_after_expiry_or_refusal(client, channel, platforms):
    platforms.expire = 2  # renewed a quarter early: cached for 1.5 s
    feishu = channel("feishu")
    post(client, feishu, message(PRICE, 1))
    post(client, feishu, message(PRICE, 2))
    assert platforms.token_requests["feishu"] == 1 and len(platforms.replies) == 2
    time.sleep(1.6)
    post(client, feishu, message(PRICE, 3))
    assert platforms.token_requests["feishu"] == 2 and len(platforms.replies) == 3
    platforms.expire = 7200
    platforms.revoke_tokens()  # the platform answers 99991663: a new token, the reply sent once
    post(client, feishu, message(PRICE, 4))
    assert platforms.token_requests["feishu"] == 3 and len(platforms.replies) == 4
    assert set(BotEvent.objects.values_list("status", flat=True)) == {EventStatus.REPLIED}


def test_a_reply_the_platform_refuses_is_kept_on_the_event(client, channel, platforms):
    from bots.services import channel_update

    feishu = channel("feishu")
    channel_update(channel=feishu, credentials={"app_secret": "not-the-secret"})
    assert post(client, feishu, message(PRICE, 1)).status_code == 200
    event = BotEvent.objects.get()
    assert event.status == EventStatus.FAILED and "bot_reply_failed" in event.error and platforms.replies == []
