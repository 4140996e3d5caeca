"""Assistant fixtures: the chat tests' fake LLM at the wire and their tiny Chinese KB, ingested for real."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "chat"))

from chat_helpers import DOCS  # noqa: E402
from fake_llm import FakeLLM  # noqa: E402


@pytest.fixture(autouse=True)
def _no_llm_by_default(settings):
    """Extractive answers unless a test points the chat at the fake LLM."""
    settings.ZHIKU_LLM_BASE_URL = ""
    settings.ZHIKU_LLM_MODEL = ""
    settings.ZHIKU_LLM_API_KEY = ""


@pytest.fixture
def fake_llm():
    server = FakeLLM()
    yield server
    server.close()


@pytest.fixture
def llm_on(settings, fake_llm):
    settings.ZHIKU_LLM_BASE_URL = fake_llm.url
    settings.ZHIKU_LLM_MODEL = "fake-model"
    settings.ZHIKU_LLM_API_KEY = "test-key"
    settings.ZHIKU_LLM_TIMEOUT = "1.5"
    return fake_llm


@pytest.fixture
def docs_kb(make_kb, alice, ingest):
    """Alice's KB holding the two product documents (专业版 price, install guide), ready to search."""
    kb = make_kb(alice, "产品文档")
    ingest(kb, dict(DOCS))
    return kb


@pytest.fixture
def assistant(docs_kb, alice):
    from assistants.services import assistant_create

    return assistant_create(owner=alice, name="产品助手", kb_ids=[docs_kb.pk])
