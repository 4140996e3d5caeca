"""A document's history: its versions (``DocumentVersion``) and the ids it used to have (``DocumentAlias``).

A document keeps one id for its whole life. A new version is ingested on a row of its own (``Document.replaces``
names the document) and, when ready, folded into the document in one transaction: its chunks replace the
document's, a ``DocumentVersion`` row records it and the ingesting row's id becomes an alias of the document
(knowledge/ingestion/versions.py). Imported at the end of knowledge/models.py, so Django registers them there.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class DocumentVersion(models.Model):
    """One version a document has served: who uploaded it, when, its file (kept for the newest
    ZHIKU_DOCUMENT_VERSIONS_KEPT versions, then pruned: ``file`` empty) and who replaced it."""

    document = models.ForeignKey("knowledge.Document", verbose_name=_("document"), on_delete=models.CASCADE,
                                 related_name="versions")
    number = models.PositiveIntegerField(verbose_name=_("version"))
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("uploaded by"), null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    uploaded_at = models.DateTimeField(verbose_name=_("uploaded at"))
    size = models.BigIntegerField(verbose_name=_("size"), default=0)
    sha256 = models.CharField(verbose_name=_("SHA-256"), max_length=64, blank=True, default="")
    chunk_count = models.PositiveIntegerField(verbose_name=_("chunk count"), default=0)
    file = models.FileField(verbose_name=_("file"), upload_to="uploads/%Y/%m/", max_length=500, blank=True)
    chunk_size = models.PositiveIntegerField(verbose_name=_("chunk size"), null=True, blank=True)
    chunk_overlap = models.PositiveIntegerField(verbose_name=_("chunk overlap"), null=True, blank=True)
    restored_from = models.PositiveIntegerField(verbose_name=_("restored from"), null=True, blank=True,
                                                help_text=_("The version whose file this one re-ingested"))
    replaced_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("replaced by"), null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    replaced_at = models.DateTimeField(verbose_name=_("replaced at"), null=True, blank=True)

    class Meta:
        verbose_name = _("document version")
        verbose_name_plural = _("document versions")
        ordering = ["document_id", "-number"]
        constraints = [models.UniqueConstraint(fields=["document", "number"], name="document_version_unique_number")]

    def __str__(self) -> str:
        return f"{self.document_id} v{self.number}"


class DocumentAlias(models.Model):
    """An id a document used to have (an older row of its chain, or the row a new version was ingested on):
    pages and the API redirect it to the document."""

    old_id = models.BigIntegerField(verbose_name=_("old id"), primary_key=True)
    document = models.ForeignKey("knowledge.Document", verbose_name=_("document"), on_delete=models.CASCADE,
                                 related_name="aliases")
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("document alias")
        verbose_name_plural = _("document aliases")

    def __str__(self) -> str:
        return f"{self.old_id} → {self.document_id}"
