"""Golden questions: labelled on the health page, re-run by the sweeper's round after a change and nightly, the
answer rate kept per run and a drop tied to the document changed before it; the KB page shows the drop to owners."""
from __future__ import annotations

from datetime import timedelta

import pytest
from chat_helpers import DOCS
from django.test import Client
from django.utils import timezone

from audit.models import AuditEntry
from chat.golden import golden_sweep
from chat.models import GoldenRun
from knowledge.models import Chunk, Document, Role
from knowledge.services.kbs import membership_set

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("judge_only")]

QUESTION = "知库专业版的价格是多少？"
NO_PRICE = "# 知库专业版\n\n## 功能\n\n知库专业版支持多知识库检索、混合检索和命中测试。\n"


@pytest.fixture
def golden_kb(judged_kb, alice, client_for):
    kb = judged_kb
    chunk = Chunk.objects.filter(kb=kb, content__contains="9800").first()
    response = client_for(alice).post(f"/api/kbs/{kb.pk}/health/labels/", {"question": QUESTION, "chunk_id": chunk.pk, "answer": "9800"},
                                      format="json")
    assert response.status_code == 201, response.content
    return kb


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def upload(kb, name: str, text: str, user, capture) -> None:
    """A new version of ``name`` through the upload service, ingested at commit (the document row may be merged)."""
    from knowledge.ingestion.upload import UploadedItem, document_upload

    with capture(execute=True):
        document_upload(kb=kb, items=[UploadedItem(name=name, data=text.encode())], user=user)


def test_a_change_that_loses_the_answer_is_a_drop_tied_to_the_document(golden_kb, alice, bob, client_for,
                                                                         django_capture_on_commit_callbacks):
    kb = golden_kb
    [baseline] = golden_sweep()
    assert (baseline.trigger, baseline.questions, baseline.answered, baseline.rate, baseline.dropped) == ("baseline", 1, 1, 1.0, False)
    assert golden_sweep() == []  # nothing changed, not a day old: not due

    upload(kb, "pro.md", NO_PRICE, alice, django_capture_on_commit_callbacks)  # a new version without the price
    kb.refresh_from_db()
    [after] = golden_sweep()
    current = Document.objects.filter(kb=kb, source_name="pro.md", status="ready").order_by("-updated_at").first()
    assert (after.trigger, after.answered, after.rate, after.previous_rate, after.dropped) == ("change", 0, 0.0, 1.0, True)
    assert (after.document_id, after.document_version) == (current.pk, current.version)
    assert after.failed == [{"id": after.failed[0]["id"], "text": QUESTION}]
    # In the audit log too, with the change that came before it.
    entry = AuditEntry.objects.get(action="kb.golden_drop")
    assert entry.kb_id == kb.pk and entry.actor is None and entry.origin == "system"
    assert entry.changes["rate"] == [1.0, 0.0] and entry.changes["failed"] == [QUESTION]
    assert (entry.changes["document_id"], entry.changes["document_version"]) == (current.pk, current.version)
    log = client_for(alice).get("/api/audit/", {"kb": kb.pk}).json()
    assert any(e["action"] == "kb.golden_drop" for e in log["results"])

    data = client_for(alice).get(f"/api/kbs/{kb.pk}/health/golden/").json()
    assert data["questions"] == 1 and data["latest"]["dropped"] is True and data["latest"]["document_id"] == current.pk
    assert [r["id"] for r in data["runs"]] == [after.pk, baseline.pk]
    page = signed_in(alice).get(f"/kbs/{kb.pk}/")
    assert b'id="golden-drop"' in page.content and b"chat/golden.js" in page.content

    membership_set(kb=kb, role=Role.VIEWER, user=bob)
    assert client_for(bob).get(f"/api/kbs/{kb.pk}/health/golden/").status_code == 404
    page = signed_in(bob).get(f"/kbs/{kb.pk}/")
    assert page.status_code == 200 and b'id="golden-drop"' not in page.content

    upload(kb, "pro.md", DOCS["pro.md"], alice, django_capture_on_commit_callbacks)  # the price back: no drop
    [back] = golden_sweep()
    assert (back.trigger, back.rate, back.previous_rate, back.dropped) == ("change", 1.0, 0.0, False)
    assert AuditEntry.objects.filter(action="kb.golden_drop").count() == 1  # a rise is not audited


def test_the_golden_questions_run_nightly(golden_kb):
    [baseline] = golden_sweep()
    assert golden_sweep(now=timezone.now() + timedelta(hours=23)) == []
    [nightly] = golden_sweep(now=timezone.now() + timedelta(hours=25))
    assert (nightly.trigger, nightly.rate, nightly.dropped) == ("nightly", 1.0, False)
    assert GoldenRun.objects.filter(kb=golden_kb).count() == 2 and baseline.pk < nightly.pk


def test_a_kb_without_labelled_answers_is_not_run(judged_kb):
    assert golden_sweep() == [] and not GoldenRun.objects.exists()
