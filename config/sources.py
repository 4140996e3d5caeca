"""Settings of the sources (sources/; docs/ingestion.md#sources), read from the environment."""
from __future__ import annotations

import os

from core.env import env_bool, env_int

# Sources (sources/; docs/ingestion.md#sources): connectors that keep a KB in sync with web sites, Git, buckets,
# Feishu and Yuque. A source's URL is typed by a KB owner and fetched by the server, so private and loopback
# addresses are refused (core/net/netguard.py) unless ALLOW_PRIVATE is on (documents on the intranet).
ZHIKU_SOURCES_ALLOW_PRIVATE = env_bool("ZHIKU_SOURCES_ALLOW_PRIVATE", False)
# Loopback addresses the address check treats as public, so tests can stand a "public" site on 127.0.0.2 and
# check that nothing reaches 127.0.0.1. Refused when ZHIKU_ENV=production (config/settings.py).
ZHIKU_SOURCES_PUBLIC_TEST_ADDRESSES = tuple(
    a.strip() for a in os.environ.get("ZHIKU_SOURCES_PUBLIC_TEST_ADDRESSES", "").split(",") if a.strip())
if ZHIKU_SOURCES_PUBLIC_TEST_ADDRESSES and os.environ.get("ZHIKU_ENV", "local") == "production":
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("ZHIKU_SOURCES_PUBLIC_TEST_ADDRESSES is for tests only: unset it when ZHIKU_ENV=production.")
# Every TICK seconds each worker (and the web process in thread mode) starts the runs of due sources, once across
# all of them (a row lock in PostgreSQL; docs/production.md), and fails runs whose heartbeat (written every
# HEARTBEAT seconds) stopped for STALL seconds. 0: no scheduled runs in this process.
ZHIKU_SOURCES_TICK_SECONDS = float(os.environ.get("ZHIKU_SOURCES_TICK_SECONDS", "60"))
ZHIKU_SOURCES_HEARTBEAT_SECONDS = float(os.environ.get("ZHIKU_SOURCES_HEARTBEAT_SECONDS", "10"))
ZHIKU_SOURCES_STALL_SECONDS = float(os.environ.get("ZHIKU_SOURCES_STALL_SECONDS", "300"))
# Budgets of one run: items a scan may yield, seconds each request may take, per-item errors kept in the history.
ZHIKU_SOURCES_MAX_ITEMS = env_int("ZHIKU_SOURCES_MAX_ITEMS", 1000)
ZHIKU_SOURCES_TIMEOUT_SECONDS = float(os.environ.get("ZHIKU_SOURCES_TIMEOUT_SECONDS", "30"))
ZHIKU_SOURCES_MAX_RUN_ERRORS = env_int("ZHIKU_SOURCES_MAX_RUN_ERRORS", 100)
# Further modules that register kinds of source (a site's own connectors, outside sources/kinds/), comma-separated.
ZHIKU_SOURCE_KIND_MODULES = [m.strip() for m in os.environ.get("ZHIKU_SOURCE_KIND_MODULES", "").split(",") if m.strip()]
# The web kind (sources/kinds/web.py; docs/sources/web.md): the largest max_pages an owner may set, and the
# User-Agent its requests send (robots.txt rules are looked up for the product token "zhiku-bot").
ZHIKU_SOURCES_WEB_MAX_PAGES = env_int("ZHIKU_SOURCES_WEB_MAX_PAGES", 10_000)
ZHIKU_SOURCES_WEB_USER_AGENT = os.environ.get("ZHIKU_SOURCES_WEB_USER_AGENT",
                                              "zhiku-bot/1.0 (knowledge-base crawler; docs/sources/web.md)")
