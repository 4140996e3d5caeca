"""WeCom (企业微信): a self-built app's message callback (接收消息), answered with the app's message/send API.

Receiving (developer.work.weixin.qq.com "接收消息与事件", "加解密方案说明"): the URL check is a GET with
``msg_signature``, ``timestamp``, ``nonce`` and ``echostr``, answered with the decrypted echostr; a message is a POST
of XML whose ``<Encrypt>`` holds the message's XML. Both are checked the same way (bots/crypto.py): the signature
over token, timestamp, nonce and ciphertext before anything is decrypted, the timestamp within
``ZHIKU_BOTS_CALLBACK_WINDOW_SECONDS`` of now, and the ReceiveId inside the plaintext must be the channel's corp id.
Every failure, from the envelope's XML to the message's, is the one refusal (bots/protocol.py).
Replying ("发送应用消息"): ``POST /cgi-bin/message/send?access_token=`` (markdown, or text with
``msg_format: text``) with a token from ``GET /cgi-bin/gettoken``, cached by ``expires_in`` and fetched again when
the API answers 40014 / 42001 (invalid / expired token).
"""
from __future__ import annotations

from typing import Any
from xml.etree.ElementTree import Element

from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException
from django.conf import settings
from django.http import HttpRequest, HttpResponse

from bots.crypto import CryptoError, same, wecom_decrypt, wecom_signature
from bots.formatting import Reply, as_markdown, as_text, cut_bytes
from bots.models import BotChannel
from bots.outbound import ReplyError, call, with_token
from bots.protocol import Incoming, Outcome, check_fresh, refused, stamp, unreadable

TOKEN_REFUSED = {40014, 42001}
MAX_CONTENT_BYTES = 2048  # message/send: a text or markdown content holds at most 2048 bytes


def _xml(raw: bytes) -> Element:
    try:
        return ElementTree.fromstring(raw, forbid_dtd=True)
    except (ElementTree.ParseError, DefusedXmlException, ValueError):
        raise refused("the body is not XML (or declares a DTD)") from None


def _text(root: Element, name: str) -> str:
    return (root.findtext(name) or "").strip()


def _opened(channel: BotChannel, credentials: dict[str, str], request: HttpRequest, encrypted: str) -> bytes:
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


def receive(channel: BotChannel, credentials: dict[str, str], request: HttpRequest, limit: int) -> Outcome:
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


def access_token(channel: BotChannel, credentials: dict[str, str]) -> tuple[str, Any]:
    base = settings.ZHIKU_BOTS_WECOM_BASE_URL
    _, body = call("GET", f"{base}/cgi-bin/gettoken",
                   params={"corpid": channel.settings.get("corp_id", ""), "corpsecret": credentials.get("secret", "")})
    body = body if isinstance(body, dict) else {}
    if body.get("errcode") not in (0, None) or not body.get("access_token"):
        raise ReplyError(f"gettoken: {body.get('errcode')} {body.get('errmsg') or ''}".strip())
    return str(body["access_token"]), body.get("expires_in")


def message_body(channel: BotChannel, user: str, reply: Reply) -> dict[str, Any]:
    agent = int(channel.settings.get("agent_id") or 0)
    if channel.settings.get("msg_format") == "text":
        return {"touser": user, "msgtype": "text", "agentid": agent,
                "text": {"content": cut_bytes(as_text(reply), MAX_CONTENT_BYTES)}}
    return {"touser": user, "msgtype": "markdown", "agentid": agent,
            "markdown": {"content": cut_bytes(as_markdown(reply), MAX_CONTENT_BYTES)}}


def send(channel: BotChannel, credentials: dict[str, str], reply_to: dict[str, Any], reply: Reply) -> None:
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
    with_token("wecom", identity, lambda: access_token(channel, credentials), use)
