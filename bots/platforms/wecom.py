"""WeCom (企业微信): a self-built app's message callback (接收消息), answered with the app's message/send API.

Receiving (developer.work.weixin.qq.com "接收消息与事件", "加解密方案说明"): the URL check is a GET with
``msg_signature``, ``timestamp``, ``nonce`` and ``echostr``, answered with the decrypted echostr; a message is a POST
of XML whose ``<Encrypt>`` holds the message's XML. Both are checked the same way: the signature
over token, timestamp, nonce and ciphertext before anything is decrypted, the timestamp within
``ZHIKU_BOTS_CALLBACK_WINDOW_SECONDS`` of now, and the ReceiveId inside the plaintext must be the channel's corp id.
Every failure, from the envelope's XML to the message's, is the one refusal (bots/protocol.py).
Replying ("发送应用消息"): ``POST /cgi-bin/message/send?access_token=`` (markdown, or text with
``msg_format: text``) with a token from ``GET /cgi-bin/gettoken``, cached by ``expires_in`` and fetched again when
the API answers 40014 / 42001 (invalid / expired token).
Encryption ("加解密方案说明"): key = base64(EncodingAESKey + "="), IV = key[:16], PKCS#7 padding to 32 bytes;
plaintext = 16 random bytes + 4-byte big-endian length + message + ReceiveId; ``msg_signature`` = hex SHA-1 of the
sorted concatenation of token, timestamp, nonce and the ciphertext.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import secrets
import struct
import time
from typing import Any
from urllib.parse import urlencode
from xml.etree.ElementTree import Element

from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from bots.crypto import CryptoError, b64, cbc_decrypt, cbc_encrypt, same, unpad
from bots.formatting import Reply, as_markdown, as_text, cut_bytes
from bots.outbound import ReplyError, call, with_token
from bots.platforms.base import Callback, Channel, Field, Platform
from bots.protocol import Incoming, Outcome, check_fresh, refused, stamp, unreadable

TOKEN_REFUSED = {40014, 42001}
MAX_CONTENT_BYTES = 2048  # message/send: a text or markdown content holds at most 2048 bytes


def wecom_signature(token: str, timestamp: str, nonce: str, encrypted: str) -> str:
    return hashlib.sha1("".join(sorted([token, timestamp, nonce, encrypted])).encode()).hexdigest()


def wecom_encrypt(encoding_aes_key: str, message: bytes, receive_id: str) -> str:
    """What WeCom sends as ``echostr`` or ``Encrypt`` (the self-test's sample)."""
    key = base64.b64decode(encoding_aes_key + "=")
    plain = os.urandom(16) + struct.pack(">I", len(message)) + message + receive_id.encode()
    return base64.b64encode(cbc_encrypt(key, key[:16], plain, 32)).decode()


def wecom_decrypt(encoding_aes_key: str, encrypted: str) -> tuple[bytes, str]:
    """(message, ReceiveId) of a WeCom ciphertext."""
    try:
        key = base64.b64decode(encoding_aes_key + "=")
    except (binascii.Error, ValueError):
        raise CryptoError("EncodingAESKey is not base64") from None
    if len(key) != 32:
        raise CryptoError("EncodingAESKey is not 43 characters")
    plain = unpad(cbc_decrypt(key, key[:16], b64(encrypted)), 32)
    if len(plain) < 20:
        raise CryptoError("too short")
    (length,) = struct.unpack(">I", plain[16:20])
    if 20 + length > len(plain):
        raise CryptoError("the length prefix runs past the end")
    try:
        receive_id = plain[20 + length:].decode()
    except UnicodeDecodeError:
        raise CryptoError("the ReceiveId is not text") from None
    return plain[20:20 + length], receive_id


def _aes_key(value: str) -> bool:
    """An EncodingAESKey: 43 characters of base64 that decode to an AES-256 key."""
    try:
        return len(value) == 43 and len(base64.b64decode(value + "=", validate=True)) == 32
    except (binascii.Error, ValueError):
        return False


def _xml(raw: bytes) -> Element:
    try:
        return ElementTree.fromstring(raw, forbid_dtd=True)
    except (ElementTree.ParseError, DefusedXmlException, ValueError):
        raise refused("the body is not XML (or declares a DTD)") from None


def _text(root: Element, name: str) -> str:
    return (root.findtext(name) or "").strip()


def _opened(channel: Channel, credentials: dict[str, str], request: HttpRequest, encrypted: str) -> bytes:
    """The plaintext of ``encrypted`` once the signature, the timestamp and the ReceiveId check; else the refusal."""
    params = request.GET
    timestamp = params.get("timestamp", "")
    signature = wecom_signature(credentials.get("token", ""), timestamp, params.get("nonce", ""), encrypted)
    if not credentials.get("token") or not same(params.get("msg_signature", ""), signature):
        raise refused("msg_signature does not match the Token")
    check_fresh(stamp(timestamp, digits=12), window=settings.ZHIKU_BOTS_CALLBACK_WINDOW_SECONDS,
                setting="ZHIKU_BOTS_CALLBACK_WINDOW_SECONDS")
    try:
        plain, receive_id = wecom_decrypt(credentials.get("encoding_aes_key", ""), encrypted)
    except CryptoError as exc:
        raise refused(f"the message cannot be decrypted with the EncodingAESKey ({exc})") from None
    if not same(receive_id, channel.settings.get("corp_id", "")):
        raise refused("ReceiveId is not this channel's corp id")
    return plain


def message_body(channel: Channel, user: str, reply: Reply) -> dict[str, Any]:
    agent = int(channel.settings.get("agent_id") or 0)
    if channel.settings.get("msg_format") == "text":
        return {"touser": user, "msgtype": "text", "agentid": agent,
                "text": {"content": cut_bytes(as_text(reply), MAX_CONTENT_BYTES)}}
    return {"touser": user, "msgtype": "markdown", "agentid": agent,
            "markdown": {"content": cut_bytes(as_markdown(reply), MAX_CONTENT_BYTES)}}


_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$").match


class WeCom(Platform):
    name = "wecom"
    label = gettext_lazy("WeCom")
    settings = (Field("corp_id", help=gettext_lazy("My Company → Company ID (ww…)"), valid=_NAME,
                      rule="letters, digits, _ and -"),
                Field("agent_id", help=gettext_lazy("App Management → the app's AgentId"),
                      valid=re.compile(r"^[0-9]{1,12}$").match, rule="a whole number"),
                Field("msg_format", required=False, help=gettext_lazy("markdown (default) or text"),
                      valid=re.compile(r"^(markdown|text)$").match, rule="markdown or text"))
    credentials = (Field("secret", help=gettext_lazy("App Management → the app's Secret")),
                   Field("token", help=gettext_lazy("Receive Messages → Set API Reception → Token"),
                         valid=re.compile(r"^[A-Za-z0-9]{1,64}$").match, rule="letters and digits"),
                   Field("encoding_aes_key", valid=_aes_key, rule="43 characters of base64", help=gettext_lazy(
                       "Receive Messages → Set API Reception → EncodingAESKey (43 characters)")))
    token_api = "gettoken"
    token_names = "CorpID + Secret"

    def receive(self, callback: Callback) -> Outcome:
        channel, credentials, request = callback.channel, callback.credentials, callback.request
        if request.method == "GET":
            echo = _opened(channel, credentials, request, request.GET.get("echostr", ""))
            return Outcome(HttpResponse(echo, content_type="text/plain; charset=utf-8"))
        if request.method != "POST":
            raise unreadable("WeCom checks the URL with GET and sends messages with POST")
        outer = _xml(request.body)
        message = _xml(_opened(channel, credentials, request, _text(outer, "Encrypt")))
        ack = HttpResponse(b"", content_type="text/plain")
        question, user, msg_id = _text(message, "Content"), _text(message, "FromUserName"), _text(message, "MsgId")
        if _text(message, "MsgType") != "text" or not question or not user or not msg_id:
            return Outcome(ack)
        return Outcome(ack, Incoming(event_id=msg_id, question=question, chat=user, reply_to={"touser": user}))

    def send(self, channel: Channel, credentials: dict[str, str], reply_to: dict[str, Any], reply: Reply) -> None:
        user = str(reply_to.get("touser") or "")
        if not user:
            raise ReplyError("no user to reply to")
        base = settings.ZHIKU_BOTS_WECOM_BASE_URL
        payload = message_body(channel, user, reply)

        def use(token: str) -> tuple[bool, Any]:
            _, body = call("POST", f"{base}/cgi-bin/message/send", params={"access_token": token}, body=payload)
            body = body if isinstance(body, dict) else {}
            if body.get("errcode") in TOKEN_REFUSED:
                return True, None
            if body.get("errcode") != 0:
                raise ReplyError(f"message/send: {body.get('errcode')} {body.get('errmsg') or ''}".strip())
            return False, body

        identity = (base, channel.settings.get("corp_id", ""), credentials.get("secret", ""))
        with_token("wecom", identity, lambda: self.access_token(channel, credentials), use)

    def access_token(self, channel: Channel, credentials: dict[str, str]) -> tuple[str, Any]:
        base = settings.ZHIKU_BOTS_WECOM_BASE_URL
        _, body = call("GET", f"{base}/cgi-bin/gettoken",
                       params={"corpid": channel.settings.get("corp_id", ""), "corpsecret": credentials.get("secret", "")})
        body = body if isinstance(body, dict) else {}
        if body.get("errcode") not in (0, None) or not body.get("access_token"):
            raise ReplyError(f"gettoken: {body.get('errcode')} {body.get('errmsg') or ''}".strip())
        return str(body["access_token"]), body.get("expires_in")

    def sample(self, factory: RequestFactory, path: str, channel: Channel, credentials: dict[str, str],
               expected: str) -> HttpRequest:
        """WeCom's URL check: a GET with an encrypted ``echostr``, answered with it decrypted."""
        echo = wecom_encrypt(credentials.get("encoding_aes_key", ""), expected.encode(), channel.settings.get("corp_id", ""))
        timestamp, nonce = str(int(time.time())), secrets.token_hex(8)
        query = {"msg_signature": wecom_signature(credentials.get("token", ""), timestamp, nonce, echo),
                 "timestamp": timestamp, "nonce": nonce, "echostr": echo}
        return factory.get(f"{path}?{urlencode(query)}")

    def signed_with(self, credentials: dict[str, str]) -> str:
        return "Token + EncodingAESKey"

    def unverified(self, channel: Channel, credentials: dict[str, str], token_checked: bool) -> list[str]:
        return [_("Whether the stored Token + EncodingAESKey match WeCom's: WeCom has no API to check them. WeCom checks "
                  "them when the API reception is saved in its console (Receive Messages), and a real message does.")]
