"""Chat fixtures: a fake LLM at the wire, a tiny Chinese KB."""
from __future__ import annotations

import pytest
from chat_helpers import DOCS, HANDBOOK, SALARY
from django.contrib.auth.models import Group

from knowledge.models import Document
from knowledge.services.documents import document_restrict
from tests.helpers import set_lines


@pytest.fixture(scope="module", autouse=True)
def _passage_vectors_once(passage_vectors_once):
    yield


@pytest.fixture(autouse=True)
def _no_llm_by_default(no_llm_by_default):
    """Extractive mode unless a test configures the fake LLM, whatever the environment says."""


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


@pytest.fixture
def hr_kb(make_kb, alice, ingest):
    """Alice's KB: an unrestricted handbook and a salary document restricted to the group hr; every search answered."""
    kb = make_kb(alice, "人事")
    ingest(kb, {"handbook.md": HANDBOOK, "salary.md": SALARY})
    document_restrict(document=Document.objects.get(kb=kb, source_name="salary.md"), groups=[Group.objects.create(name="hr")])
    set_lines(kb, 0.0, 0.0)
    return kb
