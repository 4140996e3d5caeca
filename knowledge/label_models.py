"""Labelled questions (``EvalQuestion``): the one store calibration, evaluation, golden runs and learning read.

A label says which passages answer a question of one KB. It is typed in (``manual``), imported, set on the health
page or on the hit-testing page, or comes from a 👍 / 👎「wrong passage」 on a chat answer (``source``). A label from
a plain viewer's vote waits in the KB's review queue (``pending``) until an editor or owner confirms or rejects it;
only ``confirmed`` labels are read by anything (``EvalQuestion.objects.evaluated()`` for calibration, evaluation and
the golden set; the label store, knowledge/stores.py, for learning). Imported at the end of knowledge/models.py, so
Django registers it there.
"""
from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from pgvector.django import VectorField


class LabelSource(models.TextChoices):
    MANUAL = "manual", _("typed in")
    IMPORT = "import", _("imported")
    HEALTH = "health", _("health page")
    HIT_TEST = "hit_test", _("hit testing")
    FEEDBACK_UP = "feedback_up", _("👍 on an answer")
    FEEDBACK_DOWN = "feedback_down", _("👎 wrong passage")


class LabelStatus(models.TextChoices):
    PENDING = "pending", _("waiting for review")
    CONFIRMED = "confirmed", _("confirmed")
    REJECTED = "rejected", _("rejected")


class LabelQuerySet(models.QuerySet):
    def confirmed(self) -> LabelQuerySet:
        return self.filter(status=LabelStatus.CONFIRMED)

    def evaluated(self) -> LabelQuerySet:
        """The labels calibration, evaluation and the golden set read: confirmed, less those that only name a wrong
        passage (a 👎 「wrong passage」 says nothing of whether the KB answers: it is not an unanswerable question)."""
        return self.confirmed().exclude(Q(relevant=[]) & ~Q(negative_hashes=[]))


class EvalQuestion(models.Model):
    """A labelled question of a KB: the documents (external ids or source names) that answer it; none = unanswerable.

    ``answers``, optional, are the answer's text spans: with them an evaluation
    can also score the chat's answers (``chat.evaluation``), not only retrieval.
    ``passage_hashes`` / ``negative_hashes`` are the ``content_hash`` of the passages that answer it / were wrong
    for it: learning finds the KB's chunks by them, so a label outlives its document's re-ingestion while the
    passage's text is unchanged (``chunk_ids`` are the chunks as labelled, for display).
    """

    kb = models.ForeignKey("knowledge.KnowledgeBase", verbose_name=_("knowledge base"), on_delete=models.CASCADE,
                           related_name="eval_questions")
    text = models.TextField(verbose_name=_("text"), )
    relevant = ArrayField(models.CharField(max_length=500), verbose_name=_("relevant"), default=list, blank=True)
    answers = ArrayField(models.CharField(max_length=1000), verbose_name=_("answers"), default=list, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("created by"), null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    source = models.CharField(verbose_name=_("source"), max_length=16, choices=LabelSource.choices, default=LabelSource.MANUAL)
    status = models.CharField(verbose_name=_("status"), max_length=10, choices=LabelStatus.choices, default=LabelStatus.CONFIRMED)
    chunk_ids = ArrayField(models.BigIntegerField(), verbose_name=_("passages"), default=list, blank=True)
    passage_hashes = ArrayField(models.CharField(max_length=64), verbose_name=_("passage hashes"), default=list, blank=True)
    negative_chunk_ids = ArrayField(models.BigIntegerField(), verbose_name=_("wrong passages"), default=list, blank=True)
    negative_hashes = ArrayField(models.CharField(max_length=64), verbose_name=_("wrong passage hashes"), default=list, blank=True)
    question_embedding = VectorField(verbose_name=_("question embedding"), dimensions=settings.ZHIKU_EMBEDDING_DIM,
                                     null=True, blank=True, help_text=_("The question embedded as a query, for learning"))
    embedding_model = models.CharField(verbose_name=_("embedding model"), max_length=300, blank=True, default="")
    # The chat answer a vote came from (chat.Message, named by id: knowledge does not depend on chat).
    message_id = models.BigIntegerField(verbose_name=_("message"), null=True, blank=True)
    reviewed_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("reviewed by"), null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    reviewed_at = models.DateTimeField(verbose_name=_("reviewed at"), null=True, blank=True)

    objects = LabelQuerySet.as_manager()

    class Meta:
        app_label = "knowledge"
        verbose_name = _("evaluation question")
        verbose_name_plural = _("evaluation questions")
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=~Q(text=""), name="evalquestion_text_nonempty"),
            models.CheckConstraint(condition=Q(status__in=["pending", "confirmed", "rejected"]), name="evalquestion_status_valid"),
        ]
        # Learning reads a KB's confirmed labels with their vectors by an exact scan of this index's range: a KB
        # holds hundreds of labels, where an HNSW scan filtered by KB could miss the nearest.
        indexes = [models.Index(fields=["kb", "status"], name="evalquestion_kb_status"),
                   models.Index(fields=["message_id"], name="evalquestion_message",
                                condition=Q(message_id__isnull=False))]

    def __str__(self) -> str:
        return self.text[:60]
