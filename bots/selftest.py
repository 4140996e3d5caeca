"""``POST /api/assistants/<id>/channels/<cid>/test/``: what can be verified about a channel from here, and what cannot.

- **The callback** (``callback``): a sample event signed and encrypted here with the stored secrets, sent through the
  channel's own callback URL as its platform would send it: Feishu's ``url_verification`` (encrypted and signed when
  an Encrypt Key is set), WeCom's URL check (a GET with an encrypted ``echostr``), DingTalk's signed text message with
  no text (checked, acknowledged, not answered); each stamped with the time now and counted against the channel's
  rate like any callback. It shows the callback path works, and when it fails, why (which the platform's own answer
  never says). It cannot show that the stored secrets are the platform's: the sample was made with the same values.
- **The credentials** (``token``): where the platform has an API for it, an access token asked for with the stored
  credentials through the outbound client (bots/outbound.py), and the platform's real answer: Feishu's
  tenant_access_token (App ID, App Secret), WeCom's gettoken (CorpID, Secret), DingTalk's accessToken (the RobotCode
  as AppKey, and the AppSecret, which also signs DingTalk's callbacks).
- **What stays unverified** (``unverified``): what no API checks — Feishu's Verification Token and Encrypt Key,
  WeCom's Token and EncodingAESKey, a DingTalk AppSecret without a RobotCode — each with how it can be verified (the
  platform's own URL check when the address is saved in its console, a real message).
- **The address** (``address``): the callback URL as the page shows it (``ZHIKU_PUBLIC_URL``, else the address the
  page was opened at); a loopback or private host cannot be reached by the platform (core/http/address.py).

``ok``: no check failed; ``complete``: besides, nothing stayed unverified and the address is public. Never a secret.
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

from bots import dingtalk, feishu, wecom
from bots.callback import respond
from bots.crypto import dingtalk_sign, feishu_encrypt, feishu_signature, wecom_encrypt, wecom_signature
from bots.models import BotChannel, BotKind
from bots.outbound import ReplyError
from bots.services import channel_credentials
from core.errors import ApplicationError
from core.http.address import local_host, url_host


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


def _signed_with(channel: BotChannel, creds: dict[str, str]) -> str:
    if channel.kind == "feishu":
        return "Verification Token" + (" + Encrypt Key" if creds.get("encrypt_key") else "")
    return "Token + EncodingAESKey" if channel.kind == "wecom" else "AppSecret"


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
        return {"ok": False, "status": response.status_code, "detail": detail, "checked": ""}
    if channel.kind == "feishu":
        ok = json.loads(text).get("challenge") == expected
    else:
        ok = channel.kind == "dingtalk" or text == expected
    checked = _("A sample event signed here with the stored %(secrets)s went through the callback URL and was answered "
                "as %(platform)s expects: the callback path works. It does not show that these values are "
                "%(platform)s's: the sample was signed with the same stored values.") % {
        "secrets": _signed_with(channel, creds), "platform": BotKind(channel.kind).label}
    return {"ok": ok, "status": 200, "checked": checked if ok else "",
            "detail": "" if ok else _("The callback's answer is not the one the platform expects.")}


# Per kind: the token call, the API it asks (as the platform's documentation names it) and what it proves.
_TOKEN_CALLS = {"feishu": (feishu.tenant_token, "tenant_access_token", "App ID + App Secret"),
                "wecom": (wecom.access_token, "gettoken", "CorpID + Secret"),
                "dingtalk": (dingtalk.access_token, "accessToken", "RobotCode (AppKey) + AppSecret")}


def _token(channel: BotChannel, creds: dict[str, str]) -> dict[str, Any] | None:
    """The platform's own answer to the stored credentials (None: a DingTalk channel without a RobotCode)."""
    if channel.kind == "dingtalk" and not channel.settings.get("robot_code"):
        return None
    fetch, api, names = _TOKEN_CALLS[channel.kind]
    words = {"platform": BotKind(channel.kind).label, "api": api, "names": names}
    try:
        fetch(channel, creds)
    except ReplyError as exc:
        return {"ok": False, "detail": exc.detail,
                "checked": _("%(platform)s did not issue an access token (%(api)s) for the %(names)s.") % words}
    return {"ok": True, "detail": "",
            "checked": _("%(platform)s issued an access token (%(api)s) for the %(names)s: they are right.") % words}


def _unverified(channel: BotChannel, creds: dict[str, str], token: dict[str, Any] | None) -> list[str]:
    """What this test cannot verify, each with how it can be."""
    if channel.kind == "feishu":
        return [_("Whether the stored %(secrets)s match Feishu's: Feishu has no API to check them. Feishu checks them "
                  "when the request URL is saved in its console (Events & Callbacks), and a real message does.") % {
            "secrets": _signed_with(channel, creds)}]
    if channel.kind == "wecom":
        return [_("Whether the stored Token + EncodingAESKey match WeCom's: WeCom has no API to check them. WeCom checks "
                  "them when the API reception is saved in its console (Receive Messages), and a real message does.")]
    if token is None:
        return [_("Whether the AppSecret is DingTalk's: without the RobotCode (AppKey) it cannot be checked with "
                  "DingTalk's API. Add the RobotCode to the channel and test again, or send the robot a real message.")]
    return []


def _address(channel: BotChannel, base_url: str) -> dict[str, Any]:
    url = base_url + channel.callback_url
    host = url_host(url)
    if not local_host(host):
        return {"url": url, "public": True, "detail": ""}
    return {"url": url, "public": False, "detail": _(
        "The callback URL's host %(host)s is a loopback or private address: %(platform)s cannot reach it. Set "
        "ZHIKU_PUBLIC_URL to the address the internet reaches this site at (docs/integrations.md).") % {
        "host": host or "-", "platform": BotKind(channel.kind).label}}


def channel_test(channel: BotChannel, *, base_url: str) -> dict[str, Any]:
    """``{"ok", "complete", "callback": {"ok", "status", "detail", "checked"}, "token": {"ok", "detail", "checked"} |
    null, "unverified": [sentence…], "address": {"url", "public", "detail"}}`` for the callback URL on ``base_url``."""
    address = _address(channel, base_url)
    try:
        creds = channel_credentials(channel)
    except ApplicationError as exc:
        return {"ok": False, "complete": False, "token": None, "unverified": [], "address": address,
                "callback": {"ok": False, "status": exc.status_code, "detail": exc.message, "checked": ""}}
    if not channel.enabled:
        return {"ok": False, "complete": False, "token": None, "unverified": [], "address": address,
                "callback": {"ok": False, "status": 404, "detail": _("The channel is turned off."), "checked": ""}}
    callback = _callback(channel, creds)
    token = _token(channel, creds)
    unverified = _unverified(channel, creds, token)
    ok = callback["ok"] and (token is None or token["ok"])
    return {"ok": ok, "complete": ok and not unverified and address["public"], "callback": callback, "token": token,
            "unverified": unverified, "address": address}
