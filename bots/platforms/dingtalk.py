"""DingTalk (钉钉开放平台): a robot's HTTP callback (消息接收模式 HTTP), answered on the message's sessionWebhook.

Receiving (open.dingtalk.com "接收消息"): the headers ``timestamp`` (milliseconds) and ``sign`` =
base64(HMAC-SHA256(AppSecret, timestamp + "\\n" + AppSecret)); a timestamp more than
``ZHIKU_BOTS_REPLAY_WINDOW_SECONDS`` (an hour) from now is refused, as DingTalk's own rule says. The sign covers
the timestamp alone, not the body: a channel takes each (timestamp, sign) with one body only
(``Callback.signature_once``), so a captured pair cannot carry another question or sessionWebhook. The
sign and the timestamp are checked before the body is read; every failure is the one refusal (bots/protocol.py).
The body holds
``msgtype`` (only ``text`` is answered), ``text.content``, ``conversationType`` (1 single, 2 group: DingTalk sends a
group's messages only when the robot is @-mentioned), ``msgId``, ``sessionWebhook`` and its expiry.
Replying ("机器人回复消息"): POST ``{"msgtype": "markdown", "markdown": {"title", "text"}}`` to the sessionWebhook,
whose host must be one of ``ZHIKU_BOTS_DINGTALK_WEBHOOK_HOSTS`` (https; http only for a loopback address).
A channel's test asks DingTalk for an access token with the RobotCode (the app's AppKey) and the AppSecret
("获取企业内部应用的accessToken", ``POST /v1.0/oauth2/accessToken``), the one API that says whether the AppSecret
is DingTalk's (bots/selftest.py); replying needs no token.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import json
import secrets
import time
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.test import RequestFactory
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from bots.crypto import same
from bots.formatting import Reply, as_markdown, cut_bytes
from bots.outbound import ReplyError, call
from bots.platforms.base import Callback, Channel, Field, Platform
from bots.protocol import Incoming, Outcome, check_fresh, json_object, refused, stamp, unreadable

MAX_MARKDOWN_BYTES = 20000


def dingtalk_sign(timestamp: str, app_secret: str) -> str:
    digest = hmac.new(app_secret.encode(), f"{timestamp}\n{app_secret}".encode(), hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def check_webhook(url: str) -> None:
    """The sessionWebhook is a DingTalk API host (``ZHIKU_BOTS_DINGTALK_WEBHOOK_HOSTS``), else ReplyError."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError:
        raise ReplyError("the sessionWebhook is not a URL") from None
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if host not in settings.ZHIKU_BOTS_DINGTALK_WEBHOOK_HOSTS or not (
            parts.scheme == "https" or (parts.scheme == "http" and loopback)):
        raise ReplyError(f"the sessionWebhook's host {host or '-'} is not a DingTalk API host "
                         "(ZHIKU_BOTS_DINGTALK_WEBHOOK_HOSTS)")


class DingTalk(Platform):
    name = "dingtalk"
    label = gettext_lazy("DingTalk")
    settings = (Field("robot_code", required=False, help=gettext_lazy("The robot's RobotCode (AppKey), for reference")),)
    credentials = (Field("app_secret", help=gettext_lazy("Credentials → AppSecret: signs each callback")),)
    token_api = "accessToken"
    token_names = "RobotCode (AppKey) + AppSecret"

    def receive(self, callback: Callback) -> Outcome:
        credentials, request, limit = callback.credentials, callback.request, callback.limit
        if request.method != "POST":
            raise unreadable("DingTalk sends its messages with POST")
        timestamp, sign = request.headers.get("timestamp", ""), request.headers.get("sign", "")
        secret = credentials.get("app_secret", "")
        if not secret or not same(sign, dingtalk_sign(timestamp, secret)):
            raise refused("sign does not match the AppSecret")
        window = settings.ZHIKU_BOTS_REPLAY_WINDOW_SECONDS
        millis = stamp(timestamp, digits=16)
        check_fresh(millis / 1000, window=window, setting="ZHIKU_BOTS_REPLAY_WINDOW_SECONDS")
        if not callback.signature_once(millis, request.body, window):
            raise refused("this timestamp and sign came before with another body (a replay)")
        body = json_object(request.body, limit)
        ack = JsonResponse({})
        text: dict[str, Any] = body["text"] if isinstance(body.get("text"), dict) else {}
        question = str(text.get("content") or "").strip()
        msg_id = str(body.get("msgId") or "")
        if body.get("msgtype") != "text" or not question or not msg_id:
            return Outcome(ack)
        if str(body.get("conversationType")) == "2" and body.get("isInAtList") is False:
            return Outcome(ack)
        chat = str(body.get("conversationId") or body.get("senderStaffId") or body.get("senderId") or msg_id)
        reply_to = {"webhook": str(body.get("sessionWebhook") or ""),
                    "expires": body.get("sessionWebhookExpiredTime"), "sender": str(body.get("senderStaffId") or "")}
        return Outcome(ack, Incoming(event_id=msg_id, question=question, chat=chat, reply_to=reply_to))

    def send(self, channel: Channel, credentials: dict[str, str], reply_to: dict[str, Any], reply: Reply) -> None:
        url = str(reply_to.get("webhook") or "")
        check_webhook(url)
        expires = reply_to.get("expires")
        if isinstance(expires, (int, float)) and expires < time.time() * 1000:
            raise ReplyError("the sessionWebhook has expired")
        text = cut_bytes(as_markdown(reply), MAX_MARKDOWN_BYTES)
        title = cut_bytes(reply.text.strip().splitlines()[0] if reply.text.strip() else channel.assistant.name, 60)
        _, body = call("POST", url, body={"msgtype": "markdown", "markdown": {"title": title, "text": text}})
        body = body if isinstance(body, dict) else {}
        if body.get("errcode") != 0:
            raise ReplyError(f"sessionWebhook: {body.get('errcode')} {body.get('errmsg') or ''}".strip())

    def access_token(self, channel: Channel, credentials: dict[str, str]) -> tuple[str, Any]:
        """(accessToken, seconds it lives) for the robot's app; ReplyError with DingTalk's code and message (a wrong
        AppKey or AppSecret: HTTP 400 ``invalidClientIdOrSecret``)."""
        _, body = call("POST", f"{settings.ZHIKU_BOTS_DINGTALK_BASE_URL}/v1.0/oauth2/accessToken",
                       body={"appKey": channel.settings.get("robot_code", ""), "appSecret": credentials.get("app_secret", "")})
        body = body if isinstance(body, dict) else {}
        if not body.get("accessToken"):
            raise ReplyError(f"accessToken: {body.get('code') or '-'} {body.get('message') or ''}".strip())
        return str(body["accessToken"]), body.get("expireIn")

    def token_checkable(self, channel: Channel) -> bool:
        return bool(channel.settings.get("robot_code"))

    def sample(self, factory: RequestFactory, path: str, channel: Channel, credentials: dict[str, str],
               expected: str) -> HttpRequest:
        """A signed text message with no text: checked, acknowledged, not answered (DingTalk has no URL check)."""
        timestamp = str(int(time.time() * 1000))
        body = {"msgtype": "text", "text": {"content": ""}, "msgId": "zhiku-selftest-" + secrets.token_hex(8),
                "conversationType": "1"}
        return factory.post(path, json.dumps(body), content_type="application/json", HTTP_TIMESTAMP=timestamp,
                            HTTP_SIGN=dingtalk_sign(timestamp, credentials.get("app_secret", "")))

    def answered(self, text: str, expected: str) -> bool:
        return True

    def signed_with(self, credentials: dict[str, str]) -> str:
        return "AppSecret"

    def unverified(self, channel: Channel, credentials: dict[str, str], token_checked: bool) -> list[str]:
        if token_checked:
            return []
        return [_("Whether the AppSecret is DingTalk's: without the RobotCode (AppKey) it cannot be checked with "
                  "DingTalk's API. Add the RobotCode to the channel and test again, or send the robot a real message.")]
