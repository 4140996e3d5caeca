"""A KB's health for its owner: the questions it could not answer, the most asked, the 👎 by reason.

Read from the stored chat turns (``Message``): an assistant message records the KBs its question searched
(``kb_ids``), its verdict and the sources given; its question is the user message before it in the same
conversation. Questions are grouped by their normalised text (``normalise``). Only a KB the caller owns is
read (``owned_kb``: anyone else, a viewer included, gets the KB's 404), and of each turn only the sources from
this KB are shown, each as the KB holds it now (``_current``: a turn kept the passages of the version that answered
it), so what the page offers to label is a serving chunk. The actions (``label_add``) write the labelled questions
calibration and evaluation read (``knowledge.models.EvalQuestion``); the FAQ action is ``knowledge.services.faq``.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import OuterRef, Subquery
from django.utils import timezone

from chat.errors import ChatError
from chat.models import Feedback, Message, MessageStatus, Rating, Role, Verdict
from core.errors import fail
from knowledge.access import kbs_for_user
from knowledge.errors import KnowledgeError
from knowledge.models import EvalQuestion, KnowledgeBase, LabelSource
from knowledge.models import Role as KBRole
from knowledge.retrieval.request import SearchRequest
from knowledge.selectors import chunks_cited_now
from knowledge.services.labels import label_passage
from knowledge.services.labels import question_key as normalise
from knowledge.services.search import Search, search

SINCE_DAYS = (1, 7, 30, 90, 365)
DEFAULT_SINCE_DAYS = 30
MAX_TURNS = 5000
"""The newest turns read per report: enough for the counts of a busy month, a bounded query always."""
MAX_ROWS = 50
LIVE_PASSAGES = 10
"""Rows whose turns kept no source of this KB (not found before any was given) get their best passages from a
search run now, for at most this many rows per report."""
PASSAGES_PER_ROW = 3
PASSAGE_CHARS = 300


def owned_kb(*, user, kb_id: Any) -> KnowledgeBase:
    """The KB if ``user`` owns it (its owner, an owner member, staff with superuser rights); else its 404."""
    try:
        kb = kbs_for_user(user=user, min_role=KBRole.OWNER).filter(pk=int(kb_id)).first()
    except (TypeError, ValueError):
        kb = None
    if kb is None:
        raise fail(KnowledgeError.KB_NOT_FOUND)
    return kb


def since_clean(value: Any) -> int:
    if value in (None, ""):
        return DEFAULT_SINCE_DAYS
    try:
        days = int(value)
    except (TypeError, ValueError):
        raise fail(ChatError.INVALID_SINCE, choices=", ".join(map(str, SINCE_DAYS))) from None
    if days not in SINCE_DAYS:
        raise fail(ChatError.INVALID_SINCE, choices=", ".join(map(str, SINCE_DAYS)))
    return days


def _passage(source: dict[str, Any]) -> dict[str, Any]:
    document = source.get("document") or {}
    return {"chunk_id": source.get("chunk_id"), "document_id": document.get("id"),
            "title": document.get("title") or document.get("source_name") or "",
            "section_path": list(source.get("section_path") or []),
            "content": str(source.get("content") or "")[:PASSAGE_CHARS]}


@dataclass
class _Group:
    question: str
    count: int = 0
    not_found: int = 0
    uncertain: int = 0
    answered: int = 0
    last_asked: Any = None
    passages: list[dict[str, Any]] | None = None

    def add(self, turn: dict[str, Any], kb_id: int) -> None:
        self.count += 1
        verdict = turn["verdict"]
        self.not_found += verdict == Verdict.NOT_FOUND
        self.uncertain += verdict == Verdict.UNCERTAIN
        self.answered += verdict == Verdict.ANSWERED
        if self.last_asked is None:  # turns come newest first
            self.last_asked = turn["created_at"]
        if not self.passages:
            own = [s for s in turn["sources"] or [] if isinstance(s, dict) and s.get("kb_id") == kb_id]
            self.passages = [_passage(s) for s in own[:PASSAGES_PER_ROW]]

    def json(self, key: str) -> dict[str, Any]:
        passages = self.passages or []
        return {"key": key, "question": self.question, "count": self.count, "not_found": self.not_found,
                "uncertain": self.uncertain, "answered": self.answered, "last_asked": self.last_asked,
                "best_passage": passages[0] if passages else None, "passages": passages}


def _turns(kb: KnowledgeBase, since) -> list[dict[str, Any]]:
    """The settled answers of turns that searched ``kb`` since ``since``, newest first, with their question."""
    question = (Message.objects.filter(conversation=OuterRef("conversation"), role=Role.USER, id__lt=OuterRef("id"))
                .order_by("-id").values("content")[:1])
    return [dict(row) for row in Message.objects.filter(role=Role.ASSISTANT, kb_ids__contains=[kb.pk], created_at__gte=since,
                                       status=MessageStatus.COMPLETE)
                .exclude(verdict="").annotate(question=Subquery(question))
                .order_by("-id").values("id", "question", "verdict", "sources", "created_at")[:MAX_TURNS]]


def _current(user, kb: KnowledgeBase, groups: list[_Group]) -> None:
    """The rows' passages as the KB holds them now: a passage of a replaced version becomes the current version's
    chunk with its text, or is dropped when the new version no longer holds it (a row left without one gets its
    passages from a search run now, as one whose turns kept none). Labelling a replaced chunk would fail with
    ``chunk_not_found``: the page offers only what serves."""
    cited = [(p["chunk_id"], p["document_id"], p["content"]) for g in groups for p in g.passages or [] if p["chunk_id"]]
    now = chunks_cited_now(user=user, kb=kb, cited=cited) if cited else {}
    for group in groups:
        chunks = {chunk.pk: chunk for p in group.passages or [] if (chunk := now.get(p["chunk_id"])) is not None}
        group.passages = [{"chunk_id": c.pk, "document_id": c.document_id, "title": c.document.title or c.document.source_name,
                           "section_path": list(c.section_path), "content": c.content[:PASSAGE_CHARS]}
                          for c in chunks.values()]


def _live_passages(user, kb: KnowledgeBase, question: str) -> list[dict[str, Any]]:
    """The best passages of ``kb`` for ``question`` as the KB searches now (whatever the verdict)."""
    result = search(Search(request=SearchRequest(query=question[:1000], top_k=PASSAGES_PER_ROW), user=user, kbs=[kb]))
    from core.jsonable import candidate_json

    return [_passage(candidate_json(c)) for c in result.candidates[:PASSAGES_PER_ROW]]


def health_report(*, user, kb: KnowledgeBase, since_days: int = DEFAULT_SINCE_DAYS) -> dict[str, Any]:
    """The health of ``kb`` (owned by ``user``, ``owned_kb``) over the last ``since_days`` days."""
    since = timezone.now() - timedelta(days=since_days)
    groups: dict[str, _Group] = {}
    turns = _turns(kb, since)
    for turn in turns:
        key = normalise(turn["question"] or "")
        if key:
            groups.setdefault(key, _Group(question=" ".join((turn["question"] or "").split()))).add(turn, kb.pk)
    failing = sorted(((k, g) for k, g in groups.items() if g.not_found or g.uncertain),
                     key=lambda kg: (-(kg[1].not_found + kg[1].uncertain), -kg[1].last_asked.timestamp()))[:MAX_ROWS]
    most = sorted(groups.items(), key=lambda kg: (-kg[1].count, -kg[1].last_asked.timestamp()))[:MAX_ROWS]
    _current(user, kb, list({id(g): g for _, g in failing + most}.values()))
    live = 0
    for _, group in failing:
        if not group.passages and live < LIVE_PASSAGES:
            live += 1
            try:
                group.passages = _live_passages(user, kb, group.question)
            except Exception:  # noqa: BLE001 - a row without passages is still worth showing
                group.passages = []
    labelled = {normalise(t) for t in EvalQuestion.objects.evaluated().filter(kb=kb).values_list("text", flat=True)}
    rows = [dict(g.json(k), labelled=k in labelled) for k, g in failing]
    return {
        "kb": {"id": kb.pk, "name": kb.name}, "since_days": since_days, "turns": len(turns),
        "verdicts": {v: sum(t["verdict"] == v for t in turns) for v in Verdict.values},
        "failing": rows,
        "most_asked": [dict(g.json(k), labelled=k in labelled) for k, g in most],
        "downvotes": _downvotes(kb, since),
    }


def _downvotes(kb: KnowledgeBase, since) -> list[dict[str, Any]]:
    """👎 on answers from ``kb`` since ``since``, grouped by their reason (normalised; blank is its own group)."""
    question = (Message.objects.filter(conversation=OuterRef("message__conversation"), role=Role.USER,
                                       id__lt=OuterRef("message_id")).order_by("-id").values("content")[:1])
    rows = (Feedback.objects.filter(rating=Rating.DOWN, message__kb_ids__contains=[kb.pk], updated_at__gte=since)
            .annotate(question=Subquery(question)).order_by("-updated_at")
            .values("reason", "question", "message_id", "updated_at")[:MAX_TURNS])
    reasons: dict[str, dict[str, Any]] = {}
    for row in rows:
        key = normalise(row["reason"])
        entry = reasons.setdefault(key, {"reason": " ".join(row["reason"].split()), "count": 0,
                                         "last": row["updated_at"], "questions": []})
        entry["count"] += 1
        if row["question"] and row["question"] not in entry["questions"] and len(entry["questions"]) < 5:
            entry["questions"].append(row["question"])
    return sorted(reasons.values(), key=lambda e: -e["count"])[:MAX_ROWS]


def label_add(*, user, kb: KnowledgeBase, question: Any, chunk_id: Any, answer: Any = "") -> EvalQuestion:
    """Label ``chunk_id`` (a passage of ``kb``) as answering ``question``: a confirmed labelled question naming the
    passage and its document, with ``answer`` as its answer span when given (the golden set); the same question
    labelled again gains the passage. The KB's judge is recalibrated from its labels (knowledge/services/labels.py)."""
    return label_passage(user=user, kb=kb, question=question, chunk_id=chunk_id, answer=answer, source=LabelSource.HEALTH)
