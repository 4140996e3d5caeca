"""A chunk's history: each change of its text by a person (or its keeping at a re-ingest) is a ``ChunkRevision``.

Written in the transaction that changes the chunk (knowledge/revisions.py, called by knowledge/services/chunks.py and
knowledge/ingestion/pinning.py); listed, shown as a diff and reverted through knowledge/services/revisions.py.
Imported at the end of knowledge/models.py, so Django registers it there.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class RevisionKind(models.TextChoices):
    CREATE = "create", _("added by hand")
    EDIT = "edit", _("edited")
    REVERT = "revert", _("reverted")
    PIN = "pin", _("kept at re-ingest")


class ChunkRevision(models.Model):
    """One change of a chunk's text: its number (1, 2, 3… per chunk), the text before and after, who and when.

    ``create``: the chunk was added by hand (no text before); ``edit``: its text was changed; ``revert``: its text
    was set back to the text before revision ``reverts``; ``pin``: a re-ingest of the document no longer had its
    edited text and kept it as a pinned chunk (the text is unchanged; ``document_version`` is the new version).
    """

    chunk = models.ForeignKey("knowledge.Chunk", verbose_name=_("chunk"), on_delete=models.CASCADE, related_name="revisions")
    kb = models.ForeignKey("knowledge.KnowledgeBase", verbose_name=_("knowledge base"), on_delete=models.CASCADE,
                           related_name="+")
    document = models.ForeignKey("knowledge.Document", verbose_name=_("document"), on_delete=models.CASCADE,
                                 related_name="+")
    number = models.PositiveIntegerField(verbose_name=_("number"))
    kind = models.CharField(verbose_name=_("kind"), max_length=10, choices=RevisionKind.choices)
    content_before = models.TextField(verbose_name=_("text before"), blank=True, default="")
    content_after = models.TextField(verbose_name=_("text after"))
    reverts = models.PositiveIntegerField(verbose_name=_("reverts"), null=True, blank=True,
                                          help_text=_("For a revert: the revision whose earlier text was restored"))
    document_version = models.PositiveIntegerField(verbose_name=_("document version"), null=True, blank=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("user"), null=True, blank=True,
                             on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(verbose_name=_("created at"), default=timezone.now)

    class Meta:
        verbose_name = _("chunk revision")
        verbose_name_plural = _("chunk revisions")
        ordering = ["chunk_id", "-number"]
        constraints = [models.UniqueConstraint(fields=["chunk", "number"], name="chunk_revision_unique_number")]

    def __str__(self) -> str:
        return f"{self.chunk_id} r{self.number}"
