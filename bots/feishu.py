"""Feishu (飞书开放平台): event subscription v2.0 callbacks and replies as interactive cards.

Receiving (open.feishu.cn 文档 "事件订阅概述", "接收消息 im.message.receive_v1"): a ``url_verification`` body is
answered with its challenge once its Verification Token matches; with an Encrypt Key set, bodies arrive as
``{"encrypt": …}`` (bots/crypto.py) and ``X-Lark-Signature``, when sent, is checked. A text message is answered
in a direct chat (p2p) always, in a group only when the bot is @-mentioned (``bot_open_id``, when set, must be
the one mentioned); the mention placeholders (``@_user_1``) are taken out of the question.
Replying ("回复消息"): ``POST /open-apis/im/v1/messages/{message_id}/reply`` with a tenant access token
("自建应用获取 tenant_access_token"), cached until shortly before it expires and fetched again when the API
answers 99991663 / 99991661 (token invalid / missing).
"""
from __future__ import annotations

import json
import re
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse

from bots.crypto import CryptoError, feishu_decrypt, feishu_signature, same
from bots.formatting import Reply, sources_markdown, tables_as_rows, verdict_line
from bots.models import BotChannel
from bots.outbound import ReplyError, call, with_token
from bots.protocol import Incoming, Outcome, json_object, refused, unreadable

TOKEN_REFUSED = {99991663, 99991661}
_MESSAGE_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
_PLACEHOLDER = re.compile(r"@_user_\d+")


def _open(request: HttpRequest, credentials: dict[str, str], limit: int) -> dict[str, Any]:
    """The event as JSON: decrypted (and its signature checked) when the channel has an Encrypt Key."""
    body = json_object(request.body, limit)
    key = credentials.get("encrypt_key", "")
    if not key:
        if "encrypt" in body:
            raise unreadable("the event is encrypted, but no Encrypt Key is stored for this channel")
        return body
    if not isinstance(body.get("encrypt"), str):
        raise refused("an Encrypt Key is set, but the event is not encrypted")
    signature = request.headers.get("X-Lark-Signature")
    if signature is not None:
        expected = feishu_signature(request.headers.get("X-Lark-Request-Timestamp", ""),
                                    request.headers.get("X-Lark-Request-Nonce", ""), key, request.body)
        if not same(signature, expected):
            raise refused("X-Lark-Signature")
    try:
        return json_object(feishu_decrypt(key, body["encrypt"]), limit)
    except CryptoError as exc:
        raise refused(f"the event cannot be decrypted with the Encrypt Key ({exc})") from None


def _question(message: dict[str, Any], bot_open_id: str) -> str | None:
    """The text the bot is asked, or None when the message is not for it (not text; a group without its mention)."""
    if message.get("message_type") != "text":
        return None
    try:
        text = str(json.loads(message.get("content") or "{}").get("text") or "")
    except (ValueError, AttributeError):
        return None
    mentions = [m for m in message.get("mentions") or [] if isinstance(m, dict)]
    ours = [m for m in mentions if not bot_open_id or (m.get("id") or {}).get("open_id") == bot_open_id]
    if message.get("chat_type") != "p2p" and not ours:
        return None
    for m in mentions:
        placeholder = str(m.get("key") or "")
        if placeholder:
            text = text.replace(placeholder, "" if m in ours else "@" + str(m.get("name") or ""))
    return _PLACEHOLDER.sub("", text).strip() or None


def receive(channel: BotChannel, credentials: dict[str, str], request: HttpRequest, limit: int) -> Outcome:
    if request.method != "POST":
        raise unreadable("Feishu sends its events with POST")
    event = _open(request, credentials, limit)
    header: dict[str, Any] = event["header"] if isinstance(event.get("header"), dict) else {}
    token = event.get("token") if "header" not in event else header.get("token")
    if not same(str(token or ""), credentials.get("verification_token", "")):
        raise refused("Verification Token")
    if event.get("type") == "url_verification":
        return Outcome(JsonResponse({"challenge": str(event.get("challenge") or "")}))
    ack = JsonResponse({})
    body: dict[str, Any] = event["event"] if isinstance(event.get("event"), dict) else {}
    if header.get("event_type") != "im.message.receive_v1" or (body.get("sender") or {}).get("sender_type") == "app":
        return Outcome(ack)
    message: dict[str, Any] = body["message"] if isinstance(body.get("message"), dict) else {}
    question = _question(message, channel.settings.get("bot_open_id", ""))
    message_id = str(message.get("message_id") or "")
    if question is None or not _MESSAGE_ID.match(message_id):
        return Outcome(ack)
    event_id = str(header.get("event_id") or message_id)
    return Outcome(ack, Incoming(event_id=event_id, question=question, chat=str(message.get("chat_id") or message_id),
                                 reply_to={"message_id": message_id}))


def card(reply: Reply) -> dict[str, Any]:
    """An interactive card (卡片 JSON 1.0): the answer as lark_md, the verdict as a note, the sources with links."""
    elements: list[dict[str, Any]] = [{"tag": "div", "text": {"tag": "lark_md", "content": tables_as_rows(reply.text)}}]
    if line := verdict_line(reply.verdict):
        elements.append({"tag": "note", "elements": [{"tag": "plain_text", "content": line}]})
    if sources := sources_markdown(reply):
        elements += [{"tag": "hr"}, {"tag": "div", "text": {"tag": "lark_md", "content": sources}}]
    return {"config": {"wide_screen_mode": True}, "elements": elements}


def tenant_token(channel: BotChannel, credentials: dict[str, str]) -> tuple[str, Any]:
    base = settings.ZHIKU_BOTS_FEISHU_BASE_URL
    _, body = call("POST", f"{base}/open-apis/auth/v3/tenant_access_token/internal",
                   body={"app_id": channel.settings.get("app_id", ""), "app_secret": credentials.get("app_secret", "")})
    body = body if isinstance(body, dict) else {}
    if body.get("code") != 0 or not body.get("tenant_access_token"):
        raise ReplyError(f"tenant_access_token: {body.get('code')} {body.get('msg') or ''}".strip())
    return str(body["tenant_access_token"]), body.get("expire")


def send(channel: BotChannel, credentials: dict[str, str], reply_to: dict[str, Any], reply: Reply) -> None:
    message_id = str(reply_to.get("message_id") or "")
    if not _MESSAGE_ID.match(message_id):
        raise ReplyError("no message to reply to")
    base = settings.ZHIKU_BOTS_FEISHU_BASE_URL
    content = json.dumps(card(reply), ensure_ascii=False)

    def use(token: str) -> tuple[bool, Any]:
        _, body = call("POST", f"{base}/open-apis/im/v1/messages/{message_id}/reply",
                       headers={"Authorization": f"Bearer {token}"}, body={"msg_type": "interactive", "content": content})
        body = body if isinstance(body, dict) else {}
        if body.get("code") in TOKEN_REFUSED:
            return True, None
        if body.get("code") != 0:
            raise ReplyError(f"reply: {body.get('code')} {body.get('msg') or ''}".strip())
        return False, body

    identity = (base, channel.settings.get("app_id", ""), credentials.get("app_secret", ""))
    with_token("feishu", identity, lambda: tenant_token(channel, credentials), use)
