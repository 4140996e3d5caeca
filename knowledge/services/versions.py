"""A document's history: its versions, and restoring one (re-ingested from its kept file by the same swap as an upload).

The versions themselves are recorded when a version is committed (knowledge/ingestion/versions.py).
"""
from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet

from core.audit import Action, record
from core.errors import fail
from knowledge.document_fields import KEY as FIELDS_KEY
from knowledge.errors import KnowledgeError
from knowledge.ingestion import run, versions
from knowledge.models import Document, DocumentStatus, DocumentVersion
from knowledge.services.documents import lock_document


def version_list(*, document: Document) -> QuerySet[DocumentVersion]:
    """The document's versions, newest first."""
    return DocumentVersion.objects.filter(document=document).select_related("uploaded_by", "replaced_by").order_by("-number")


def version_restore(*, document: Document, number: int, user=None) -> Document:
    """Make version ``number`` the current one: its kept file is ingested again as a new version (numbered after the
    newest), which replaces the serving one when it is ready, as an upload would; returns that version's row.

    404 ``version_not_found``; 409 ``version_current`` (it serves already), ``version_file_pruned`` (its file was
    pruned), ``busy`` (the document, or a new version of it, is being processed).
    """
    with transaction.atomic():
        current = lock_document(document)
        if current.status != DocumentStatus.READY:
            raise fail(KnowledgeError.BUSY)
        version = DocumentVersion.objects.filter(document=current, number=number).first()
        if version is None:
            raise fail(KnowledgeError.VERSION_NOT_FOUND, number=number)
        if number == current.version:
            raise fail(KnowledgeError.VERSION_CURRENT, number=number)
        if not version.file:
            raise fail(KnowledgeError.VERSION_FILE_PRUNED, number=number, kept=settings.ZHIKU_DOCUMENT_VERSIONS_KEPT)
        if current.replacements.filter(status__in=[DocumentStatus.PENDING, DocumentStatus.PROCESSING]).exists():
            raise fail(KnowledgeError.BUSY, "new_version")
        fields = (current.metadata or {}).get(FIELDS_KEY)
        restored = Document.objects.create(
            kb=current.kb, title=current.title, source_name=current.source_name, external_id=current.external_id,
            source_url=current.source_url, doc_type=current.doc_type, size=version.size, sha256=version.sha256,
            file=version.file.name, status=DocumentStatus.PENDING, version=versions.next_number(current), replaces=current,
            metadata={"restored_from": number, **({FIELDS_KEY: fields} if fields else {})},
            uploaded_by=user if (user is not None and user.is_authenticated) else None,
            chunk_size=version.chunk_size, chunk_overlap=version.chunk_overlap,
        )
        restored.restricted_to_groups.set(current.restricted_to_groups.all())
        run.enqueue_ingest(restored.pk)
        record(Action.DOCUMENT_VERSION_RESTORE, actor=restored.uploaded_by, obj=current,
               changes={"restored": number, "version": [current.version, restored.version]})
    return restored
