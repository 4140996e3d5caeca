"""DingTalk (钉钉开放平台): a robot's HTTP callback (消息接收模式 HTTP), answered on the message's sessionWebhook.

Receiving (open.dingtalk.com "接收消息"): the headers ``timestamp`` (milliseconds) and ``sign`` =
base64(HMAC-SHA256(AppSecret, timestamp + "\\n" + AppSecret)); a timestamp more than
``ZHIKU_BOTS_REPLAY_WINDOW_SECONDS`` (an hour) from now is refused, as DingTalk's own rule says. The sign covers
the timestamp alone, not the body: a channel takes each (timestamp, sign) with one body only
(``bots.services.signature_once``), so a captured pair cannot carry another question or sessionWebhook. The
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

import ipaddress
import time
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, JsonResponse

from bots.crypto import dingtalk_sign, same
from bots.formatting import Reply, as_markdown, cut_bytes
from bots.models import BotChannel
from bots.outbound import ReplyError, call
from bots.protocol import Incoming, Outcome, check_fresh, json_object, refused, stamp, unreadable
from bots.services import signature_once

MAX_MARKDOWN_BYTES = 20000


def receive(channel: BotChannel, credentials: dict[str, str], request: HttpRequest, limit: int) -> Outcome:
    if request.method != "POST":
        raise unreadable("DingTalk sends its messages with POST")
    timestamp, sign = request.headers.get("timestamp", ""), request.headers.get("sign", "")
    secret = credentials.get("app_secret", "")
    if not secret or not same(sign, dingtalk_sign(timestamp, secret)):
        raise refused("sign does not match the AppSecret")
    window = settings.ZHIKU_BOTS_REPLAY_WINDOW_SECONDS
    millis = stamp(timestamp, digits=16)
    check_fresh(millis / 1000, window=window, setting="ZHIKU_BOTS_REPLAY_WINDOW_SECONDS")
    if not signature_once(channel=channel, timestamp=millis, body=request.body, window=window):
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


def send(channel: BotChannel, credentials: dict[str, str], reply_to: dict[str, Any], reply: Reply) -> None:
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


def access_token(channel: BotChannel, credentials: dict[str, str]) -> tuple[str, Any]:
    """(accessToken, seconds it lives) for the robot's app; ReplyError with DingTalk's code and message (a wrong
    AppKey or AppSecret: HTTP 400 ``invalidClientIdOrSecret``)."""
    _, body = call("POST", f"{settings.ZHIKU_BOTS_DINGTALK_BASE_URL}/v1.0/oauth2/accessToken",
                   body={"appKey": channel.settings.get("robot_code", ""), "appSecret": credentials.get("app_secret", "")})
    body = body if isinstance(body, dict) else {}
    if not body.get("accessToken"):
        raise ReplyError(f"accessToken: {body.get('code') or '-'} {body.get('message') or ''}".strip())
    return str(body["accessToken"]), body.get("expireIn")
