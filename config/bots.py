"""Settings of the chat bots (bots/; docs/integrations.md "飞书、钉钉、企业微信") and the site's public address, from the environment."""
from __future__ import annotations

import os
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from core.env import env_int

# The address people and the chat platforms reach this site at (https://zhiku.example.com, a path prefix allowed):
# the assistant page builds the channels' callback URLs, the share link and the embed code on it. Blank: the address
# the page was opened at, which behind a proxy or on a laptop (http://127.0.0.1:8000) the platforms cannot reach.
ZHIKU_PUBLIC_URL = os.environ.get("ZHIKU_PUBLIC_URL", "").strip().rstrip("/")
if ZHIKU_PUBLIC_URL:
    _public = urlsplit(ZHIKU_PUBLIC_URL)
    if _public.scheme not in ("http", "https") or not _public.hostname or _public.query or _public.fragment:
        raise ImproperlyConfigured(f"ZHIKU_PUBLIC_URL must be an http(s) address like https://zhiku.example.com, "
                                   f"not {ZHIKU_PUBLIC_URL!r}")

# Each platform's open API (the real ones by default; a test points them at a local server speaking the protocol).
# DingTalk's is only asked for an access token by a channel's test; a robot replies to each message's sessionWebhook.
ZHIKU_BOTS_FEISHU_BASE_URL = os.environ.get("ZHIKU_BOTS_FEISHU_BASE_URL", "https://open.feishu.cn").rstrip("/")
ZHIKU_BOTS_WECOM_BASE_URL = os.environ.get("ZHIKU_BOTS_WECOM_BASE_URL", "https://qyapi.weixin.qq.com").rstrip("/")
ZHIKU_BOTS_DINGTALK_BASE_URL = os.environ.get("ZHIKU_BOTS_DINGTALK_BASE_URL", "https://api.dingtalk.com").rstrip("/")
# The hosts a DingTalk sessionWebhook may name (comma-separated): the message's own URL is POSTed to, so any other
# host is refused. Over https only (http for a loopback address, which the address check refuses outside tests).
ZHIKU_BOTS_DINGTALK_WEBHOOK_HOSTS = tuple(
    h.strip().lower() for h in os.environ.get("ZHIKU_BOTS_DINGTALK_WEBHOOK_HOSTS", "oapi.dingtalk.com,api.dingtalk.com").split(",")
    if h.strip())
# Days a received event's id is kept, so a retried event is answered once (older rows are pruned).
ZHIKU_BOTS_DEDUP_DAYS = env_int("ZHIKU_BOTS_DEDUP_DAYS", 7)
# A chat's follow-ups join its last conversation while it was used within these seconds; later, a new one starts.
ZHIKU_BOTS_CONVERSATION_IDLE_SECONDS = env_int("ZHIKU_BOTS_CONVERSATION_IDLE_SECONDS", 3600)
# Seconds each call to a platform's API may take, and DingTalk's signed timestamp's window (one hour, its own rule);
# a DingTalk (timestamp, sign) pair is taken with one body only, remembered for as long as the window lets it in.
ZHIKU_BOTS_TIMEOUT_SECONDS = float(os.environ.get("ZHIKU_BOTS_TIMEOUT_SECONDS", "10"))
ZHIKU_BOTS_REPLAY_WINDOW_SECONDS = env_int("ZHIKU_BOTS_REPLAY_WINDOW_SECONDS", 3600)
# Seconds a Feishu callback's signed X-Lark-Request-Timestamp or a WeCom callback's timestamp may be from now, before
# or after; outside, the callback is refused.
ZHIKU_BOTS_CALLBACK_WINDOW_SECONDS = env_int("ZHIKU_BOTS_CALLBACK_WINDOW_SECONDS", 300)
# Feishu sends its URL check (url_verification) without X-Lark-Signature even when an Encrypt Key is set: for these
# seconds after a channel is added or changed, an unsigned encrypted body is opened and answered only when it is
# that check with the channel's Verification Token. Any other time an unsigned body is refused unopened (0: always).
ZHIKU_BOTS_FEISHU_URL_CHECK_SECONDS = env_int("ZHIKU_BOTS_FEISHU_URL_CHECK_SECONDS", 1800)
# Requests a minute one channel's callback URL takes (refused ones count too); past it, 429 with Retry-After and,
# once a minute, an audit entry (bot_channel.rate_limited). 0: no limit.
ZHIKU_BOTS_CHANNEL_RATE_LIMIT = env_int("ZHIKU_BOTS_CHANNEL_RATE_LIMIT", 60)
