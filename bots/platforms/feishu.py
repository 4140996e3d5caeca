"""Feishu (飞书开放平台): event subscription v2.0 callbacks and replies as interactive cards.

Receiving (open.feishu.cn 文档 "事件订阅概述", "接收消息 im.message.receive_v1", "安全校验"): a ``url_verification``
body is answered with its challenge once its Verification Token matches. With an Encrypt Key set, bodies arrive as
``{"encrypt": …}`` (``feishu_decrypt``) with ``X-Lark-Signature`` over timestamp + nonce + key + the raw body: it is
checked, and ``X-Lark-Request-Timestamp`` held to ``ZHIKU_BOTS_CALLBACK_WINDOW_SECONDS``, before the body is parsed
or decrypted. Feishu sends only its URL check unsigned; that is taken in the ``ZHIKU_BOTS_FEISHU_URL_CHECK_SECONDS``
after the channel was added or changed, and then only a ``url_verification`` (``_unsigned``). Without an Encrypt
Key nothing is signed (the token is in the body): a v2 event's ``header.create_time`` keeps a verbatim replay out
once its event id is forgotten (``_check_created``). Every failure is the one refusal (bots/protocol.py). A text
message is answered in a direct chat (p2p) always, in a group only when the bot is @-mentioned (``bot_open_id``,
when set, must be the one mentioned); the mention placeholders (``@_user_1``) are taken out of the question.
Replying ("回复消息"): ``POST /open-apis/im/v1/messages/{message_id}/reply`` with a tenant access token
("自建应用获取 tenant_access_token"), cached until shortly before it expires and fetched again when the API
answers 99991663 / 99991661 (token invalid / missing).
Encryption (事件订阅 "配置 Encrypt Key"): key = SHA-256(Encrypt Key), the first 16 bytes of the decoded body are the
IV, padding to AES's 16-byte block; ``X-Lark-Signature`` = hex SHA-256 of timestamp + nonce + Encrypt Key + body.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import time
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.test import RequestFactory
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from bots.crypto import CryptoError, b64, cbc_decrypt, cbc_encrypt, same, unpad
from bots.formatting import Reply, sources_markdown, tables_as_rows, verdict_line
from bots.outbound import ReplyError, call, with_token
from bots.platforms.base import Callback, Channel, Field, Platform
from bots.protocol import Incoming, Outcome, check_fresh, json_object, refused, stamp, unreadable

TOKEN_REFUSED = {99991663, 99991661}
_MESSAGE_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
_PLACEHOLDER = re.compile(r"@_user_\d+")


def feishu_decrypt(encrypt_key: str, encrypted: str) -> bytes:
    raw = b64(encrypted)
    if len(raw) < 32:
        raise CryptoError("too short")
    key = hashlib.sha256(encrypt_key.encode()).digest()
    return unpad(cbc_decrypt(key, raw[:16], raw[16:]), 16)


def feishu_encrypt(encrypt_key: str, plain: bytes) -> str:
    """What Feishu sends as ``encrypt`` (the self-test's sample event)."""
    iv = os.urandom(16)
    return base64.b64encode(iv + cbc_encrypt(hashlib.sha256(encrypt_key.encode()).digest(), iv, plain, 16)).decode()


def feishu_signature(timestamp: str, nonce: str, encrypt_key: str, body: bytes) -> str:
    return hashlib.sha256(timestamp.encode() + nonce.encode() + encrypt_key.encode() + body).hexdigest()


def _decrypted(raw: bytes, key: str, limit: int) -> dict[str, Any]:
    body = json_object(raw, limit)
    if not isinstance(body.get("encrypt"), str):
        raise refused("an Encrypt Key is set, but the event is not encrypted")
    try:
        return json_object(feishu_decrypt(key, body["encrypt"]), limit)
    except CryptoError as exc:
        raise refused(f"the event cannot be decrypted with the Encrypt Key ({exc})") from None


def _unsigned(channel: Channel, raw: bytes, key: str, limit: int) -> dict[str, Any]:
    """Feishu's URL check, which it sends without X-Lark-Signature: opened only in the window after the channel was
    added or changed, and then only a ``url_verification`` passes (its token is checked by ``receive``)."""
    window = settings.ZHIKU_BOTS_FEISHU_URL_CHECK_SECONDS
    if window <= 0 or time.time() - channel.updated_at.timestamp() > window:
        raise refused("X-Lark-Signature is missing (Feishu's URL check is taken unsigned only within "
                      f"ZHIKU_BOTS_FEISHU_URL_CHECK_SECONDS, {window} s, of the channel's last change: save it again)")
    event = _decrypted(raw, key, limit)
    if event.get("type") != "url_verification":
        raise refused("X-Lark-Signature is missing, and the event is not a url_verification")
    return event


def _check_created(event: dict[str, Any]) -> None:
    """A plain v2 event's ``header.create_time`` (ms): no older than the event ids are kept (``ZHIKU_BOTS_DEDUP_DAYS``:
    an older one could be a replay whose id was forgotten) and no further ahead than the callback window. It is not
    signed, so it keeps out a replay, not a forger; the window is wider than a signed timestamp's so Feishu's own
    retries of an event (hours later, the same create_time) still get in."""
    header = event.get("header")
    created = header.get("create_time") if isinstance(header, dict) else None
    if created is None:
        return
    millis = stamp(str(created), digits=16)
    days = max(1, int(settings.ZHIKU_BOTS_DEDUP_DAYS))
    off = millis / 1000 - time.time()
    if off > settings.ZHIKU_BOTS_CALLBACK_WINDOW_SECONDS or -off > days * 86400:
        raise refused(f"the event's create_time is {abs(off):.0f} s {'ahead' if off > 0 else 'old'}")


def _open(channel: Channel, request: HttpRequest, credentials: dict[str, str], limit: int) -> dict[str, Any]:
    """The event as JSON. With an Encrypt Key the signature and its timestamp are checked on the raw body before
    anything is parsed or decrypted: nothing unsigned reaches the cipher (but Feishu's URL check: ``_unsigned``)."""
    key = credentials.get("encrypt_key", "")
    if not key:
        event = json_object(request.body, limit)
        if "encrypt" in event:
            raise refused("the event is encrypted, but no Encrypt Key is stored for this channel")
        _check_created(event)
        return event
    signature = request.headers.get("X-Lark-Signature")
    if signature is None:
        return _unsigned(channel, request.body, key, limit)
    timestamp = request.headers.get("X-Lark-Request-Timestamp", "")
    expected = feishu_signature(timestamp, request.headers.get("X-Lark-Request-Nonce", ""), key, request.body)
    if not same(signature, expected):
        raise refused("X-Lark-Signature does not match the Encrypt Key")
    check_fresh(stamp(timestamp, digits=12), window=settings.ZHIKU_BOTS_CALLBACK_WINDOW_SECONDS,
                setting="ZHIKU_BOTS_CALLBACK_WINDOW_SECONDS")
    return _decrypted(request.body, key, limit)


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


def card(reply: Reply) -> dict[str, Any]:
    """An interactive card (卡片 JSON 1.0): the answer as lark_md, the verdict as a note, the sources with links."""
    elements: list[dict[str, Any]] = [{"tag": "div", "text": {"tag": "lark_md", "content": tables_as_rows(reply.text)}}]
    if line := verdict_line(reply.verdict):
        elements.append({"tag": "note", "elements": [{"tag": "plain_text", "content": line}]})
    if sources := sources_markdown(reply):
        elements += [{"tag": "hr"}, {"tag": "div", "text": {"tag": "lark_md", "content": sources}}]
    return {"config": {"wide_screen_mode": True}, "elements": elements}


def _url_check(factory: RequestFactory, path: str, credentials: dict[str, str], expected: str) -> HttpRequest:
    """Feishu's ``url_verification`` as Feishu sends it: encrypted and signed when an Encrypt Key is set."""
    plain = json.dumps({"challenge": expected, "token": credentials.get("verification_token", ""),
                        "type": "url_verification"})
    key = credentials.get("encrypt_key", "")
    if not key:
        return factory.post(path, plain, content_type="application/json")
    body = json.dumps({"encrypt": feishu_encrypt(key, plain.encode())}).encode()
    timestamp, nonce = str(int(time.time())), secrets.token_hex(8)
    return factory.post(path, body, content_type="application/json", HTTP_X_LARK_REQUEST_TIMESTAMP=timestamp,
                        HTTP_X_LARK_REQUEST_NONCE=nonce,
                        HTTP_X_LARK_SIGNATURE=feishu_signature(timestamp, nonce, key, body))


class Feishu(Platform):
    name = "feishu"
    label = gettext_lazy("Feishu")
    settings = (Field("app_id", help=gettext_lazy("Credentials & Basic Info → App ID (cli_…)"),
                      valid=re.compile(r"^[A-Za-z0-9_-]{1,64}$").match, rule="letters, digits, _ and -"),
                Field("bot_open_id", required=False, help=gettext_lazy(
                    "The bot's open_id: in groups, answer only when it is the one mentioned (blank: any mention)")))
    credentials = (Field("app_secret", help=gettext_lazy("Credentials & Basic Info → App Secret")),
                   Field("verification_token",
                         help=gettext_lazy("Events & Callbacks → Encryption Strategy → Verification Token")),
                   Field("encrypt_key", required=False, help=gettext_lazy(
                       "Events & Callbacks → Encryption Strategy → Encrypt Key (blank: events unencrypted)")))
    token_api = "tenant_access_token"
    token_names = "App ID + App Secret"

    def receive(self, callback: Callback) -> Outcome:
        channel, credentials, request, limit = callback.channel, callback.credentials, callback.request, callback.limit
        if request.method != "POST":
            raise unreadable("Feishu sends its events with POST")
        event = _open(channel, request, credentials, limit)
        header: dict[str, Any] = event["header"] if isinstance(event.get("header"), dict) else {}
        token = event.get("token") if "header" not in event else header.get("token")
        if not same(str(token or ""), credentials.get("verification_token", "")):
            raise refused("the Verification Token does not match")
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

    def send(self, channel: Channel, credentials: dict[str, str], reply_to: dict[str, Any], reply: Reply) -> None:
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
        with_token("feishu", identity, lambda: self.access_token(channel, credentials), use)

    def access_token(self, channel: Channel, credentials: dict[str, str]) -> tuple[str, Any]:
        base = settings.ZHIKU_BOTS_FEISHU_BASE_URL
        _, body = call("POST", f"{base}/open-apis/auth/v3/tenant_access_token/internal",
                       body={"app_id": channel.settings.get("app_id", ""), "app_secret": credentials.get("app_secret", "")})
        body = body if isinstance(body, dict) else {}
        if body.get("code") != 0 or not body.get("tenant_access_token"):
            raise ReplyError(f"tenant_access_token: {body.get('code')} {body.get('msg') or ''}".strip())
        return str(body["tenant_access_token"]), body.get("expire")

    def sample(self, factory: RequestFactory, path: str, channel: Channel, credentials: dict[str, str],
               expected: str) -> HttpRequest:
        return _url_check(factory, path, credentials, expected)

    def answered(self, text: str, expected: str) -> bool:
        return json.loads(text).get("challenge") == expected

    def signed_with(self, credentials: dict[str, str]) -> str:
        return "Verification Token" + (" + Encrypt Key" if credentials.get("encrypt_key") else "")

    def unverified(self, channel: Channel, credentials: dict[str, str], token_checked: bool) -> list[str]:
        return [_("Whether the stored %(secrets)s match Feishu's: Feishu has no API to check them. Feishu checks them "
                  "when the request URL is saved in its console (Events & Callbacks), and a real message does.") % {
            "secrets": self.signed_with(credentials)}]
