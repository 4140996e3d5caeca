"""Assistant fixtures: the chat tests' fake LLM at the wire and their tiny Chinese KB, ingested for real."""
from __future__ import annotations

import pytest

from tests.chat.chat_helpers import DOCS


@pytest.fixture(scope="module", autouse=True)
def _passage_vectors_once(passage_vectors_once):
    yield


@pytest.fixture(autouse=True)
def _no_llm_by_default(no_llm_by_default):
    """Extractive answers unless a test points the chat at the fake LLM."""


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
