"""Labels that teach: passages confirmed (or confirmed wrong) for a KB's questions, and the review queue of votes.

Where labels come from: an editor or owner on the hit-testing or health page (``label_passage``: confirmed at once),
a vote on a chat answer (``label_from_vote``: confirmed when the voter edits the KB, else ``pending`` in the review
queue until an editor or owner confirms or rejects it, ``label_review``). Every label is of one KB, names passages of
that KB only, and is audited. What reads them: calibration, evaluation and the golden set (``evaluated()``), and the
learn stage of searches of a KB that opted in (``KnowledgeBase.learn_from_feedback``; knowledge/retrieval/learning.py).
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core.audit import Action, record
from core.errors import fail
from knowledge.embeddings import get_embedder
from knowledge.errors import KnowledgeError
from knowledge.models import Chunk, EvalQuestion, KnowledgeBase, LabelSource, LabelStatus
from knowledge.services.calibration import schedule_recalibration

MAX_QUESTION_CHARS = 1000
_TRAILING = re.compile(r"[\s?？。.!！~～,，;；:：、]+$")


def question_key(text: str) -> str:
    """A question's identity among labels: NFKC (full-width → half-width), case folded, spaces collapsed, trailing
    punctuation dropped — 「年假有几天？」 and 「年假有几天 」 are one question (the health page groups by it too)."""
    text = " ".join(unicodedata.normalize("NFKC", text or "").casefold().split())
    return _TRAILING.sub("", text)


def question_clean(value: Any) -> str:
    text = " ".join(str(value or "").split())
    if not text or len(text) > MAX_QUESTION_CHARS:
        raise fail(KnowledgeError.INVALID_LABEL_QUESTION, limit=MAX_QUESTION_CHARS)
    return text


def labels_changed(*, kb_id: int) -> None:
    """The KB's confirmed labels changed: searches cached under the old ones are not served again."""
    KnowledgeBase.objects.filter(pk=kb_id).update(labels_version=F("labels_version") + 1)


def _chunk(kb: KnowledgeBase, chunk_id: Any) -> Chunk:
    try:
        return Chunk.objects.select_related("document").get(kb=kb, pk=int(chunk_id))
    except (Chunk.DoesNotExist, TypeError, ValueError):
        raise fail(KnowledgeError.CHUNK_NOT_FOUND) from None


def _embed(label: EvalQuestion, kb: KnowledgeBase) -> None:
    """The question embedded as a query by the KB's model (what the learn stage compares the query with), unless the
    label already holds that model's vector."""
    if label.question_embedding is not None and label.embedding_model == kb.embedding_model:
        return
    label.question_embedding = get_embedder(kb.embedding_model).embed_query(label.text)
    label.embedding_model = kb.embedding_model


def _add(values: list, items: Sequence) -> list:
    return [*values, *(i for i in items if i not in values)]


def _point(label: EvalQuestion, chunks: Sequence[Chunk], *, wrong: bool) -> None:
    """Name ``chunks`` on the label as answering its question (their documents too) or, ``wrong``, as not."""
    ids, hashes = [c.pk for c in chunks], [c.content_hash for c in chunks]
    if wrong:
        label.negative_chunk_ids = _add(label.negative_chunk_ids, ids)
        label.negative_hashes = _add(label.negative_hashes, hashes)
        label.chunk_ids = [c for c in label.chunk_ids if c not in ids]
        label.passage_hashes = [h for h in label.passage_hashes if h not in hashes]
    else:
        label.chunk_ids = _add(label.chunk_ids, ids)
        label.passage_hashes = _add(label.passage_hashes, hashes)
        label.relevant = _add(label.relevant, [str(c.document_id) for c in chunks])
        label.negative_chunk_ids = [c for c in label.negative_chunk_ids if c not in ids]
        label.negative_hashes = [h for h in label.negative_hashes if h not in hashes]


def _changes(label: EvalQuestion) -> dict[str, Any]:
    return {"question": label.text, "status": label.status, "source": label.source, "chunk_ids": list(label.chunk_ids),
            "negative_chunk_ids": list(label.negative_chunk_ids), "message_id": label.message_id}


def label_passage(*, user, kb: KnowledgeBase, question: Any, chunk_id: Any, wrong: bool = False, answer: Any = "",
                  source: str = LabelSource.HIT_TEST) -> EvalQuestion:
    """An editor's or owner's label (the caller checked the role): ``chunk_id`` answers ``question`` (``wrong``: does
    not), confirmed at once. The same question labelled again (``question_key``) gains the passage; ``answer``, an
    answer span, makes it a golden question. Recalibrates the KB's judge when its answerable labels change."""
    text = question_clean(question)
    chunk = _chunk(kb, chunk_id)
    span = " ".join(str(answer or "").split())[:1000]
    with transaction.atomic():
        key = question_key(text)
        # The texts alone (a label's vector would be read as text for nothing), then the one row locked.
        same = next((pk for pk, other in EvalQuestion.objects.filter(kb=kb, status=LabelStatus.CONFIRMED,
                                                                      message_id__isnull=True).values_list("pk", "text")
                     if question_key(other) == key), None)
        label = (EvalQuestion.objects.select_for_update().filter(pk=same).first() if same is not None else None) \
            or EvalQuestion(kb=kb, text=text, created_by=user, source=source)
        _point(label, [chunk], wrong=wrong)
        if span and span not in label.answers:
            label.answers = [*label.answers, span]
        label.status, label.reviewed_by, label.reviewed_at = LabelStatus.CONFIRMED, user, timezone.now()
        _embed(label, kb)
        label.save()
        record(Action.LABEL_CREATE, obj=label, kb=kb, changes=_changes(label))
        labels_changed(kb_id=kb.pk)
        if not wrong:
            schedule_recalibration(kb.pk)
    return label


def label_from_vote(*, user, kb: KnowledgeBase, question: str, message_id: int, chunk_id: int, wrong: bool,
                    trusted: bool) -> EvalQuestion | None:
    """The label a vote on a chat answer makes: ``chunk_id`` (its first cited passage of ``kb``) answers the question
    (👍) or is wrong for it (👎 「wrong passage」). ``trusted`` (the voter edits the KB): confirmed; else pending in
    the review queue. One label per voter and answer: voting again replaces it (a confirmed label stays confirmed
    only if the voter is trusted). None when the passage is gone."""
    chunk = Chunk.objects.select_related("document").filter(kb=kb, pk=chunk_id).first()
    text = " ".join((question or "").split())[:MAX_QUESTION_CHARS]
    if chunk is None or not text:
        return None
    with transaction.atomic():
        label = (EvalQuestion.objects.select_for_update().filter(kb=kb, message_id=message_id, created_by=user).first()
                 or EvalQuestion(kb=kb, message_id=message_id, created_by=user, text=text))
        was = label.status if label.pk else None
        label.text = text
        label.chunk_ids, label.passage_hashes, label.negative_chunk_ids, label.negative_hashes = [], [], [], []
        label.relevant = []
        _point(label, [chunk], wrong=wrong)
        label.source = LabelSource.FEEDBACK_DOWN if wrong else LabelSource.FEEDBACK_UP
        label.status = LabelStatus.CONFIRMED if trusted else LabelStatus.PENDING
        label.reviewed_by, label.reviewed_at = (user, timezone.now()) if trusted else (None, None)
        _embed(label, kb)
        label.save()
        record(Action.LABEL_CONFIRM if trusted else Action.LABEL_CREATE, obj=label, kb=kb, changes=_changes(label))
        if LabelStatus.CONFIRMED in (was, label.status):
            labels_changed(kb_id=kb.pk)
            schedule_recalibration(kb.pk)
    return label


def label_withdraw_vote(*, user, message_id: int) -> None:
    """The voter's labels from this answer, withdrawn (their vote no longer teaches: a 👎 without 「wrong passage」)."""
    with transaction.atomic():
        for label in EvalQuestion.objects.select_for_update().filter(message_id=message_id, created_by=user):
            record(Action.LABEL_DELETE, obj=label, changes=_changes(label))
            if label.status == LabelStatus.CONFIRMED:
                labels_changed(kb_id=label.kb_id)
                schedule_recalibration(label.kb_id)
            label.delete()


def label_review(*, user, kb: KnowledgeBase, label_id: Any, confirm: bool) -> EvalQuestion:
    """An editor or owner confirms (it teaches from now on) or rejects (it never does) a label of ``kb``."""
    with transaction.atomic():
        try:
            label = EvalQuestion.objects.select_for_update().get(kb=kb, pk=int(label_id))
        except (EvalQuestion.DoesNotExist, TypeError, ValueError):
            raise fail(KnowledgeError.LABEL_NOT_FOUND) from None
        was = label.status
        label.status = LabelStatus.CONFIRMED if confirm else LabelStatus.REJECTED
        label.reviewed_by, label.reviewed_at = user, timezone.now()
        if confirm:
            _embed(label, kb)
        label.save()
        record(Action.LABEL_CONFIRM if confirm else Action.LABEL_REJECT, obj=label, kb=kb,
               changes={**_changes(label), "was": was})
        if LabelStatus.CONFIRMED in (was, label.status) and was != label.status:
            labels_changed(kb_id=kb.pk)
            schedule_recalibration(kb.pk)
    return label


def labels_reembed(*, kb: KnowledgeBase, model_id: str, hashes: dict[str, str]) -> None:
    """The KB moves to ``model_id`` (``kb_reembed``, in its transaction): each label's question embedded again and its
    passages' content hashes (which name the model) mapped old → new, so the labels keep teaching."""
    labels = list(EvalQuestion.objects.select_for_update().filter(kb=kb).exclude(question_embedding__isnull=True,
                                                                               passage_hashes=[], negative_hashes=[]))
    if not labels:
        return
    embedder = get_embedder(model_id)
    for label in labels:
        label.question_embedding = embedder.embed_query(label.text)
        label.embedding_model = model_id
        label.passage_hashes = [hashes.get(h, h) for h in label.passage_hashes]
        label.negative_hashes = [hashes.get(h, h) for h in label.negative_hashes]
    EvalQuestion.objects.bulk_update(labels, ["question_embedding", "embedding_model", "passage_hashes", "negative_hashes"],
                                     batch_size=200)
    labels_changed(kb_id=kb.pk)


def label_queue(*, kb: KnowledgeBase, status: Any = LabelStatus.PENDING, question: Any = None):
    """The KB's labels of one status, newest first, with their passages' chunks (the review queue: ``pending``);
    with ``question``, only the labels of that question (``question_key``: hit testing marks what is labelled)."""
    if status not in LabelStatus.values:
        raise fail(KnowledgeError.INVALID_LABEL_STATUS, choices=", ".join(LabelStatus.values))
    labels = EvalQuestion.objects.filter(kb=kb, status=status)
    if question is not None:
        key = question_key(question_clean(question))
        labels = labels.filter(pk__in=[pk for pk, text in labels.values_list("pk", "text") if question_key(text) == key])
    return labels.select_related("created_by", "reviewed_by").order_by("-id")
