"""Golden questions: a KB's answerable labelled questions re-run after each change and nightly, their answer rate kept.

The golden set of a KB is its labelled questions that name the documents answering them (``EvalQuestion.relevant``
not empty: the health page's "label the right passage" and "add to the golden set" add them, so does the evaluation
page). A run searches each as the KB's owner and counts it answered when the verdict is ``answered`` and a
labelled document is among the passages found, holding one of the question's answer spans when it has any.
Each run is a ``GoldenRun``; a rate below the previous run's is a
drop, kept with the change that came before it (the document changed last: its id and version).

When: the sweeper's rounds (``knowledge.ingestion.recovery.each_round``, registered in chat/apps.py) call
``golden_sweep``, which runs the KBs whose content changed since their last run (the KB version moved: an
ingestion, a new version, an edited or added chunk, an FAQ entry) and those whose last run is a day old (nightly).
"""
from __future__ import annotations

import logging
import os
from datetime import timedelta
from typing import Any

from django.db.models import Exists, OuterRef, Subquery
from django.utils import timezone

from chat.models import GoldenRun, GoldenTrigger
from core.audit import NOBODY, Action, record
from knowledge.models import Document, EvalQuestion, KnowledgeBase
from knowledge.retrieval.request import SearchRequest
from knowledge.services.search import Search, search

logger = logging.getLogger(__name__)

MAX_GOLDEN_QUESTIONS = 100
"""The questions re-run per KB and run: a search each, in the sweeper's thread."""
KBS_PER_ROUND = 2
NIGHTLY = timedelta(hours=24)
TOP_K = 5


def golden_questions(kb: KnowledgeBase) -> list[EvalQuestion]:
    return list(EvalQuestion.objects.evaluated().filter(kb=kb).exclude(relevant=[]).order_by("id")[:MAX_GOLDEN_QUESTIONS])


def _answered(kb: KnowledgeBase, question: EvalQuestion) -> bool:
    result = search(Search(request=SearchRequest(query=question.text[:1000], top_k=TOP_K), user=kb.owner, kbs=[kb]))
    if result.verdict != "answered":
        return False
    wanted = set(question.relevant)
    found = [c for c in result.candidates
             if {str(c.document_id), c.source_name, os.path.splitext(c.source_name or "")[0]} & wanted]
    if question.answers:  # a golden question with its answer text: a labelled passage must still hold it
        return any(span in (c.content or "") for c in found for span in question.answers)
    return bool(found)


def _last_change(kb: KnowledgeBase) -> tuple[int | None, int | None]:
    """The document of ``kb`` changed most recently (id, version), or (None, None) for a KB without documents."""
    row = Document.objects.filter(kb=kb).order_by("-updated_at", "-id").values_list("pk", "version").first()
    return (row[0], row[1]) if row else (None, None)


def golden_run(kb: KnowledgeBase, *, trigger: str | None = None) -> GoldenRun | None:
    """Re-run the golden questions of ``kb`` and store the run (None when it has none)."""
    questions = golden_questions(kb)
    if not questions:
        return None
    kb.refresh_from_db(fields=["version"])
    version = kb.version
    previous = GoldenRun.objects.filter(kb=kb).order_by("-id").first()
    failed: list[dict[str, Any]] = []
    for question in questions:
        try:
            ok = _answered(kb, question)
        except Exception:  # noqa: BLE001 - one question that cannot be searched counts as not answered
            logger.warning("golden question %s of KB %s could not be searched", question.pk, kb.pk, exc_info=True)
            ok = False
        if not ok:
            failed.append({"id": question.pk, "text": question.text[:200]})
    answered = len(questions) - len(failed)
    rate = answered / len(questions)
    document_id, document_version = _last_change(kb)
    dropped = previous is not None and rate < previous.rate - 1e-9
    run = GoldenRun.objects.create(
        kb=kb, trigger=trigger or (GoldenTrigger.BASELINE if previous is None else GoldenTrigger.CHANGE),
        kb_version=version, document_id=document_id, document_version=document_version, questions=len(questions),
        answered=answered, rate=rate, previous_rate=None if previous is None else previous.rate, dropped=dropped,
        failed=failed)
    if dropped and previous is not None:
        logger.warning("golden answer rate of KB %s fell from %.2f to %.2f after document %s v%s",
                       kb.pk, previous.rate, rate, document_id, document_version)
        # In the audit log with the change that came before it (no actor: the sweeper found it).
        record(Action.GOLDEN_DROP, actor=NOBODY, actor_name="", obj=kb, changes={
            "rate": [round(previous.rate, 4), round(rate, 4)], "answered": [previous.answered, answered],
            "questions": len(questions), "document_id": document_id, "document_version": document_version,
            "failed": [f["text"] for f in failed[:10]], "run": run.pk})
    return run


def golden_sweep(now=None) -> list[GoldenRun]:
    """Run the KBs that are due: content changed since their last run, or the last run a day old (at most
    ``KBS_PER_ROUND`` per call, the longest waiting first)."""
    now = now or timezone.now()
    labelled = EvalQuestion.objects.evaluated().filter(kb=OuterRef("pk")).exclude(relevant=[])
    last = GoldenRun.objects.filter(kb=OuterRef("pk")).order_by("-id")
    kbs = (KnowledgeBase.objects.filter(Exists(labelled)).select_related("owner")
           .annotate(last_version=Subquery(last.values("kb_version")[:1]), last_at=Subquery(last.values("created_at")[:1])))
    due: list[tuple[float, KnowledgeBase, str]] = []
    for row in kbs.order_by("id")[:1000]:
        if row.last_at is None:
            due.append((0.0, row, GoldenTrigger.BASELINE))
        elif row.last_version != row.version:
            due.append((row.last_at.timestamp(), row, GoldenTrigger.CHANGE))
        elif now - row.last_at >= NIGHTLY:
            due.append((row.last_at.timestamp(), row, GoldenTrigger.NIGHTLY))
    runs = []
    for _, kb, trigger in sorted(due, key=lambda d: d[0])[:KBS_PER_ROUND]:
        try:
            run = golden_run(kb, trigger=trigger)
        except Exception:  # noqa: BLE001 - the sweeper goes on with the next KB
            logger.warning("golden run of KB %s failed", kb.pk, exc_info=True)
            continue
        if run is not None:
            runs.append(run)
    return runs


def golden_json(run: GoldenRun) -> dict[str, Any]:
    return {"id": run.pk, "trigger": run.trigger, "kb_version": run.kb_version, "document_id": run.document_id,
            "document_version": run.document_version, "questions": run.questions, "answered": run.answered,
            "rate": run.rate, "previous_rate": run.previous_rate, "dropped": run.dropped, "failed": run.failed,
            "created_at": run.created_at}
