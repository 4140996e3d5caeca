"""One plug-in shape for a chat platform: the registry (bots/platforms/) is where the kinds come from, and a stand-in
platform defined here, registered here and nowhere else in bots/, receives a signed callback, answers through the
assistant, replies, and passes the channel's self-test."""
from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import pytest
from django.db import connection
from django.db.models import CheckConstraint, Q
from django.http import HttpRequest, JsonResponse
from django.test import RequestFactory
from django.utils import translation

from bots.crypto import same
from bots.formatting import Reply
from bots.models import BotChannel, BotEvent, BotKind, EventStatus
from bots.platforms import PLATFORMS, register, unregister
from bots.platforms.base import Callback, Channel, Field, Platform
from bots.protocol import Incoming, Outcome, refused
from chat.models import Conversation

pytestmark = pytest.mark.django_db(transaction=True)
PRICE = "知库专业版的价格是多少？"
KEY = "echo-signing-key"


def test_the_kinds_are_the_registrys_in_its_order():
    assert list(PLATFORMS) == ["feishu", "dingtalk", "wecom"]
    with translation.override("en"):
        assert BotKind.choices == [("feishu", "Feishu"), ("dingtalk", "DingTalk"), ("wecom", "WeCom")]
    assert [str(p.label) for p in PLATFORMS.values()] == [label for _, label in BotKind.choices]
    [kind_check] = [c for c in BotChannel._meta.constraints if c.name == "bot_channel_kind_valid"]
    assert kind_check.condition == Q(kind__in=["feishu", "dingtalk", "wecom"])


def test_a_name_that_is_not_a_kind_or_is_taken_is_refused():
    class Bad(Echo):
        name = "Not-Lower"

    with pytest.raises(ValueError):
        register(Bad())
    with pytest.raises(ValueError):
        register(PLATFORMS["feishu"])


def signature(key: str, body: bytes) -> str:
    return hmac.new(key.encode(), body, hashlib.sha256).hexdigest()


class Echo(Platform):
    """A stand-in platform: a JSON message signed with HMAC-SHA256 of the body in ``X-Echo-Signature``."""

    name = "echo"
    label = "Echo"
    settings = (Field("room"),)
    credentials = (Field("key"),)
    token_api = "token"
    token_names = "room + key"
    sent: list[tuple[str, Reply]] = []

    def receive(self, callback: Callback) -> Outcome:
        request = callback.request
        if not same(request.headers.get("X-Echo-Signature", ""), signature(callback.credentials["key"], request.body)):
            raise refused("X-Echo-Signature does not match the key")
        body = json.loads(request.body)
        if body.get("check"):
            return Outcome(JsonResponse({"check": body["check"]}))
        return Outcome(JsonResponse({}), Incoming(event_id=body["id"], question=body["text"], chat=body["from"],
                                                  reply_to={"to": body["from"]}))

    def send(self, channel: Channel, credentials: dict[str, str], reply_to: dict[str, Any], reply: Reply) -> None:
        self.sent.append((reply_to["to"], reply))

    def access_token(self, channel: Channel, credentials: dict[str, str]) -> tuple[str, Any]:
        return "t0ken", 7200

    def sample(self, factory: RequestFactory, path: str, channel: Channel, credentials: dict[str, str],
               expected: str) -> HttpRequest:
        body = json.dumps({"check": expected}).encode()
        return factory.post(path, body, content_type="application/json",
                            HTTP_X_ECHO_SIGNATURE=signature(credentials["key"], body))

    def answered(self, text: str, expected: str) -> bool:
        return json.loads(text) == {"check": expected}

    def signed_with(self, credentials: dict[str, str]) -> str:
        return "key"

    def unverified(self, channel: Channel, credentials: dict[str, str], token_checked: bool) -> list[str]:
        return []


def _kind_check(kinds: list[str]) -> CheckConstraint:
    return CheckConstraint(condition=Q(kind__in=kinds), name="bot_channel_kind_valid")


@pytest.fixture
def echo():
    """Echo registered, and the kind's database check widened as the migration of a new platform would."""
    platform = register(Echo())
    Echo.sent = []
    old, new = _kind_check(["feishu", "dingtalk", "wecom"]), _kind_check(list(PLATFORMS))
    with connection.schema_editor() as editor:
        editor.remove_constraint(BotChannel, old)
        editor.add_constraint(BotChannel, new)
    yield platform
    unregister("echo")
    BotChannel.objects.filter(kind="echo").delete()
    with connection.schema_editor() as editor:
        editor.remove_constraint(BotChannel, new)
        editor.add_constraint(BotChannel, old)


def test_a_stand_in_platform_receives_a_signed_callback_answers_and_passes_its_self_test(client, assistant, echo,
                                                                                          alice, client_for, settings):
    from bots.services import channel_create

    api = client_for(alice)
    kinds = {k["kind"]: k for k in api.get("/api/bot-kinds/").json()}
    assert kinds["echo"]["settings"] == [{"name": "room", "required": True, "help": ""}]
    room = channel_create(assistant=assistant, kind="echo", name="回声", settings={"room": "r1"},
                          credentials={"key": KEY})
    assert room.callback_url.startswith("/bots/echo/")
    body = json.dumps({"id": "m-1", "text": PRICE, "from": "u-7"}, ensure_ascii=False).encode()
    forged = client.post(room.callback_url, body, content_type="application/json",
                         HTTP_X_ECHO_SIGNATURE=signature("another-key", body))
    assert forged.status_code == 403 and forged.json()["error"]["code"] == "bot_signature_invalid"
    ack = client.post(room.callback_url, body, content_type="application/json", HTTP_X_ECHO_SIGNATURE=signature(KEY, body))
    assert ack.status_code == 200 and ack.json() == {}
    [(to, reply)] = Echo.sent
    assert to == "u-7" and "9800" in reply.text and reply.citations
    assert BotEvent.objects.get().status == EventStatus.REPLIED
    assert Conversation.objects.get().channel == "echo"
    assert client.post("/bots/nosuch/abc/", body, content_type="application/json").status_code == 404
    settings.ZHIKU_PUBLIC_URL = "https://zhiku.example.com"
    report = api.post(f"/api/assistants/{assistant.pk}/channels/{room.pk}/test/").json()
    assert report["ok"] is report["complete"] is True
    assert report["callback"]["ok"] and report["token"]["ok"] and report["unverified"] == []
