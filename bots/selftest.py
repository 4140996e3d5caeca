"""``POST /api/assistants/<id>/channels/<cid>/test/``: a signed sample event through the channel's own callback
URL, as its platform would send it, and (Feishu, WeCom) a fetch of an access token with the stored credentials.

The sample asks nothing: Feishu's is a ``url_verification`` (encrypted and signed when an Encrypt Key is set),
WeCom's the URL check's GET with an encrypted ``echostr``, DingTalk's a signed text message with no text (checked,
acknowledged, not answered); each stamped with the time now, as the platform does. It counts against the
channel's rate like any callback. The report says what each step saw and, when the callback refused the sample,
why (which the platform's own answer never says), never a secret.
"""
from __future__ import annotations

import json
import secrets
import time
from typing import Any
from urllib.parse import urlencode

from django.test import RequestFactory
from django.urls import resolve
from django.utils.translation import gettext as _

from bots import feishu, wecom
from bots.callback import respond
from bots.crypto import dingtalk_sign, feishu_encrypt, feishu_signature, wecom_encrypt, wecom_signature
from bots.models import BotChannel
from bots.outbound import ReplyError
from bots.services import channel_credentials
from core.errors import ApplicationError


def _feishu(factory: RequestFactory, path: str, creds: dict[str, str], expected: str) -> Any:
    plain = json.dumps({"challenge": expected, "token": creds.get("verification_token", ""), "type": "url_verification"})
    key = creds.get("encrypt_key", "")
    if not key:
        return factory.post(path, plain, content_type="application/json")
    body = json.dumps({"encrypt": feishu_encrypt(key, plain.encode())}).encode()
    timestamp, nonce = str(int(time.time())), secrets.token_hex(8)
    return factory.post(path, body, content_type="application/json", HTTP_X_LARK_REQUEST_TIMESTAMP=timestamp,
                        HTTP_X_LARK_REQUEST_NONCE=nonce,
                        HTTP_X_LARK_SIGNATURE=feishu_signature(timestamp, nonce, key, body))


def _wecom(factory: RequestFactory, path: str, channel: BotChannel, creds: dict[str, str], expected: str) -> Any:
    echo = wecom_encrypt(creds.get("encoding_aes_key", ""), expected.encode(), channel.settings.get("corp_id", ""))
    timestamp, nonce = str(int(time.time())), secrets.token_hex(8)
    query = {"msg_signature": wecom_signature(creds.get("token", ""), timestamp, nonce, echo),
             "timestamp": timestamp, "nonce": nonce, "echostr": echo}
    return factory.get(f"{path}?{urlencode(query)}")


def _dingtalk(factory: RequestFactory, path: str, creds: dict[str, str]) -> Any:
    timestamp = str(int(time.time() * 1000))
    body = {"msgtype": "text", "text": {"content": ""}, "msgId": "zhiku-selftest-" + secrets.token_hex(8),
            "conversationType": "1"}
    return factory.post(path, json.dumps(body), content_type="application/json", HTTP_TIMESTAMP=timestamp,
                        HTTP_SIGN=dingtalk_sign(timestamp, creds.get("app_secret", "")))


def _callback(channel: BotChannel, creds: dict[str, str]) -> dict[str, Any]:
    factory = RequestFactory()
    path = channel.callback_url
    expected = "zhiku-" + secrets.token_hex(8)
    if channel.kind == "feishu":
        request = _feishu(factory, path, creds, expected)
    elif channel.kind == "wecom":
        request = _wecom(factory, path, channel, creds, expected)
    else:
        request = _dingtalk(factory, path, creds)
    match = resolve(path)  # the URL the platform is given, as it routes
    response, reason = respond(request, match.kwargs["kind"], match.kwargs["callback_id"])
    text = response.content.decode(errors="replace")
    if response.status_code != 200:
        try:
            detail = json.loads(text)["error"]["message"]
        except (ValueError, KeyError, TypeError):
            detail = text[:300]
        # The platform is told only that the callback could not be verified; the owner testing their own
        # channel is told why (the sample was made here, so the reason tells nobody else anything).
        if reason and reason != detail:
            detail = f"{detail} ({reason})"
        return {"ok": False, "status": response.status_code, "detail": detail}
    if channel.kind == "feishu":
        ok = json.loads(text).get("challenge") == expected
    else:
        ok = channel.kind == "dingtalk" or text == expected
    return {"ok": ok, "status": 200, "detail": "" if ok else _("The callback's answer is not the one the platform expects.")}


def _token(channel: BotChannel, creds: dict[str, str]) -> dict[str, Any] | None:
    fetch = {"feishu": feishu.tenant_token, "wecom": wecom.access_token}.get(channel.kind)
    if fetch is None:
        return None  # a DingTalk robot replies on each message's sessionWebhook: no token
    try:
        fetch(channel, creds)
    except ReplyError as exc:
        return {"ok": False, "detail": exc.detail}
    return {"ok": True, "detail": ""}


def channel_test(channel: BotChannel) -> dict[str, Any]:
    """``{"ok", "callback": {"ok", "status", "detail"}, "token": {"ok", "detail"} | null}``."""
    try:
        creds = channel_credentials(channel)
    except ApplicationError as exc:
        return {"ok": False, "callback": {"ok": False, "status": exc.status_code, "detail": exc.message}, "token": None}
    if not channel.enabled:
        return {"ok": False, "callback": {"ok": False, "status": 404, "detail": _("The channel is turned off.")},
                "token": None}
    callback = _callback(channel, creds)
    token = _token(channel, creds)
    return {"ok": callback["ok"] and (token is None or token["ok"]), "callback": callback, "token": token}
