"""Chat-bot fixtures: the platforms on loopback, the assistant tests' tiny Chinese KB ingested for real, channels.

The answering job runs at once (``ZHIKU_INGEST_MODE=sync``, tests/conftest.py) in the callback's request, and the
turn's worker threads read what the test wrote: the database is transactional. The platforms stand on 127.0.0.1,
which the address check (core/net/netguard.py) is told to treat as public, as tests/sources do.
"""
from __future__ import annotations

import pytest

from tests.bots.platforms import DINGTALK_APP, FEISHU_APP, WECOM_CORP, Platforms
from tests.chat.chat_helpers import DOCS

FEISHU_TOKEN = "feishu-verification-token"
FEISHU_KEY = "feishu-encrypt-key"
DINGTALK_SECRET = DINGTALK_APP[1]
WECOM_TOKEN = "wecomToken123"
WECOM_AES_KEY = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"
SECRET_DOC = "# 报销制度\n\n## 时限\n\n差旅报销须在出差结束后 30 天内提交，逾期不予受理。\n"


@pytest.fixture(scope="module", autouse=True)
def _passage_vectors_once(passage_vectors_once):
    yield


@pytest.fixture(autouse=True)
def _no_llm_by_default(no_llm_by_default):
    """Extractive answers unless a test points the chat at the fake LLM."""


@pytest.fixture
def platforms(settings):
    server = Platforms()
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = False
    settings.ZHIKU_SOURCES_PUBLIC_TEST_ADDRESSES = ("127.0.0.1",)
    settings.ZHIKU_BOTS_FEISHU_BASE_URL = server.url
    settings.ZHIKU_BOTS_WECOM_BASE_URL = server.url
    settings.ZHIKU_BOTS_DINGTALK_BASE_URL = server.url
    settings.ZHIKU_BOTS_DINGTALK_WEBHOOK_HOSTS = ("127.0.0.1",)
    yield server
    server.close()


@pytest.fixture
def docs_kb(make_kb, alice, ingest):
    kb = make_kb(alice, "产品文档")
    ingest(kb, dict(DOCS))
    return kb


@pytest.fixture
def assistant(docs_kb, alice):
    from assistants.services import assistant_create

    return assistant_create(owner=alice, name="产品助手", kb_ids=[docs_kb.pk])


@pytest.fixture
def channel(assistant):
    """Make a channel of ``kind`` for the assistant, with the platforms' test credentials."""
    from bots.services import channel_create

    def make(kind: str, *, encrypt: bool = False, **extra_settings):
        if kind == "feishu":
            settings = {"app_id": FEISHU_APP[0], **extra_settings}
            credentials = {"app_secret": FEISHU_APP[1], "verification_token": FEISHU_TOKEN}
            if encrypt:
                credentials["encrypt_key"] = FEISHU_KEY
        elif kind == "dingtalk":
            settings, credentials = {"robot_code": DINGTALK_APP[0], **extra_settings}, {"app_secret": DINGTALK_SECRET}
        else:
            settings = {"corp_id": WECOM_CORP[0], "agent_id": "1000002", **extra_settings}
            credentials = {"secret": WECOM_CORP[1], "token": WECOM_TOKEN, "encoding_aes_key": WECOM_AES_KEY}
        return channel_create(assistant=assistant, kind=kind, name=f"{kind}-{len(extra_settings)}-{encrypt}",
                              settings=settings, credentials=credentials)

    return make


@pytest.fixture(autouse=True)
def _fresh_rate_windows():
    """Each test counts its channels' callbacks from zero (the per-channel rate, bots/services.py)."""
    from assistants.ratelimit import reset_local

    reset_local()
    yield
    reset_local()
