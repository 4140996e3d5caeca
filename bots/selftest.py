"""``POST /api/assistants/<id>/channels/<cid>/test/``: what can be verified about a channel from here, and what cannot.

- **The callback** (``callback``): a sample event signed and encrypted here with the stored secrets, sent through the
  channel's own callback URL as its platform would send it (``Platform.sample``, bots/platforms/): Feishu's
  ``url_verification`` (encrypted and signed when an Encrypt Key is set), WeCom's URL check (a GET with an
  encrypted ``echostr``), DingTalk's signed text message with no text (checked, acknowledged, not answered); each
  stamped with the time now and counted against the channel's rate like any callback. It shows the callback path
  works, and when it fails, why (which the platform's own answer never says). It cannot show that the stored
  secrets are the platform's: the sample was made with the same values.
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
from typing import Any

from django.test import RequestFactory
from django.urls import resolve
from django.utils.translation import gettext as _

from bots.callback import respond
from bots.models import BotChannel
from bots.outbound import ReplyError
from bots.platforms import PLATFORMS
from bots.platforms.base import Platform
from bots.services import channel_credentials
from core.errors import ApplicationError
from core.http.address import local_host, url_host


def _callback(platform: Platform, channel: BotChannel, creds: dict[str, str]) -> dict[str, Any]:
    path = channel.callback_url
    expected = "zhiku-" + secrets.token_hex(8)
    request = platform.sample(RequestFactory(), path, channel, creds, expected)
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
    ok = platform.answered(text, expected)
    checked = _("A sample event signed here with the stored %(secrets)s went through the callback URL and was answered "
                "as %(platform)s expects: the callback path works. It does not show that these values are "
                "%(platform)s's: the sample was signed with the same stored values.") % {
        "secrets": platform.signed_with(creds), "platform": platform.label}
    return {"ok": ok, "status": 200, "checked": checked if ok else "",
            "detail": "" if ok else _("The callback's answer is not the one the platform expects.")}


def _token(platform: Platform, channel: BotChannel, creds: dict[str, str]) -> dict[str, Any] | None:
    """The platform's own answer to the stored credentials (None: the settings its token API needs are missing,
    as a DingTalk channel's without a RobotCode)."""
    if not platform.token_checkable(channel):
        return None
    words = {"platform": platform.label, "api": platform.token_api, "names": platform.token_names}
    try:
        platform.access_token(channel, creds)
    except ReplyError as exc:
        return {"ok": False, "detail": exc.detail,
                "checked": _("%(platform)s did not issue an access token (%(api)s) for the %(names)s.") % words}
    return {"ok": True, "detail": "",
            "checked": _("%(platform)s issued an access token (%(api)s) for the %(names)s: they are right.") % words}


def _address(channel: BotChannel, base_url: str) -> dict[str, Any]:
    url = base_url + channel.callback_url
    host = url_host(url)
    if not local_host(host):
        return {"url": url, "public": True, "detail": ""}
    return {"url": url, "public": False, "detail": _(
        "The callback URL's host %(host)s is a loopback or private address: %(platform)s cannot reach it. Set "
        "ZHIKU_PUBLIC_URL to the address the internet reaches this site at (docs/integrations.md).") % {
        "host": host or "-", "platform": PLATFORMS[channel.kind].label}}


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
    platform = PLATFORMS[channel.kind]
    callback = _callback(platform, channel, creds)
    token = _token(platform, channel, creds)
    unverified = platform.unverified(channel, creds, token is not None)
    ok = callback["ok"] and (token is None or token["ok"])
    return {"ok": ok, "complete": ok and not unverified and address["public"], "callback": callback, "token": token,
            "unverified": unverified, "address": address}
