"""A document's lifecycle after upload: retry, re-index, delete, restrict to groups, its own fields.

Upload and ingestion: ``knowledge.ingestion``; chunk edits: ``knowledge.services.chunks``.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import transaction
from django.utils import timezone

from core.audit import Action, record
from core.errors import CoreError, fail
from knowledge.document_fields import KEY as FIELDS_KEY
from knowledge.document_fields import fields_clean
from knowledge.errors import KnowledgeError
from knowledge.files import delete_after_commit
from knowledge.ingestion import claims, pinning, run, versions
from knowledge.locks import lock_kb_then_document
from knowledge.models import Document, DocumentStatus, DocumentVersion
from knowledge.services.calibration import schedule_recalibration
from knowledge.services.kbs import kb_bump_version


def lock_document(document: Document) -> Document:
    """The document's row, locked until the transaction ends: retry, re-index and delete of one document
    run one at a time and each sees what the previous one left (404 once it is gone).

    Its KB's row is locked first (``knowledge.locks``), as an ingestion's commit takes them.
    """
    current = lock_kb_then_document(document.kb_id, document.pk)
    if current is None:
        raise fail(KnowledgeError.DOCUMENT_NOT_FOUND)
    return current


def _requeue(document: Document) -> None:
    """Back to pending with a fresh count of attempts, queued when the transaction commits."""
    Document.objects.filter(pk=document.pk).update(
        status=DocumentStatus.PENDING, claim="", ingest_attempts=0, error_code="", error_message="", updated_at=timezone.now())
    run.enqueue_ingest(document.pk)


def document_retry(*, document: Document) -> Document:
    """Queue a failed document again, or one whose ingestion stalled (its worker died)."""
    with transaction.atomic():
        current = lock_document(document)
        if current.status != DocumentStatus.FAILED and not claims.is_stalled(current):
            raise fail(KnowledgeError.NOT_FAILED, status=DocumentStatus(current.status).label)
        _requeue(current)
        record(Action.DOCUMENT_RETRY, obj=current, changes={"status": [current.status, DocumentStatus.PENDING]})
    document.refresh_from_db()
    return document


def document_reindex(*, document: Document, keep_edits: bool = True) -> Document:
    """Parse and embed a ready document again from its stored file (e.g. after a parser or chunking change).

    A failed or stalled version is queued again in place; a stalled new version of a ready one is resumed.
    Edited chunks whose text the new chunks no longer hold are kept, pinned, unless ``keep_edits`` is false
    (knowledge/ingestion/pinning.py).
    """
    with transaction.atomic():
        document = lock_document(document)
        stalled = claims.is_stalled(document)
        if document.status not in (DocumentStatus.READY, DocumentStatus.FAILED) and not stalled:
            raise fail(KnowledgeError.BUSY)
        if not document.file:
            raise fail(KnowledgeError.NO_FILE)
        if document.status == DocumentStatus.READY:
            newer = document.replacements.select_for_update().filter(
                status__in=[DocumentStatus.PENDING, DocumentStatus.PROCESSING]).first()
            if newer is not None:
                if not claims.is_stalled(newer):
                    raise fail(KnowledgeError.BUSY, "new_version")
                _keeping_edits(newer, keep_edits)
                _requeue(newer)
                record(Action.DOCUMENT_REINDEX, obj=newer, changes={"resumed": True, **_edits_change(keep_edits)})
                newer.refresh_from_db()
                return newer
            clone = Document.objects.create(
                kb=document.kb, title=document.title, source_name=document.source_name, external_id=document.external_id,
                source_url=document.source_url, doc_type=document.doc_type, size=document.size, sha256=document.sha256,
                file=document.file.name,
                status=DocumentStatus.PENDING, version=versions.next_number(document), replaces=document,
                metadata={k: v for k, v in document.metadata.items() if k not in ("timings_ms", pinning.KEEP_EDITS)}
                | ({} if keep_edits else {pinning.KEEP_EDITS: False}), uploaded_by=document.uploaded_by,
                chunk_size=document.chunk_size, chunk_overlap=document.chunk_overlap,
            )
            clone.restricted_to_groups.set(document.restricted_to_groups.all())
            run.enqueue_ingest(clone.pk)
            record(Action.DOCUMENT_REINDEX, obj=clone, changes={"version": [document.version, clone.version],
                                                               **_edits_change(keep_edits)})
            return clone
        _keeping_edits(document, keep_edits)
        _requeue(document)
        record(Action.DOCUMENT_REINDEX, obj=document, changes={"status": [document.status, DocumentStatus.PENDING],
                                                              **_edits_change(keep_edits)})
    document.refresh_from_db()
    return document


def _keeping_edits(document: Document, keep: bool) -> None:
    """Whether the version queued again keeps edited chunks whose text is gone (its row's metadata, read at commit)."""
    metadata = {k: v for k, v in (document.metadata or {}).items() if k != pinning.KEEP_EDITS}
    Document.objects.filter(pk=document.pk).update(metadata=metadata if keep else {**metadata, pinning.KEEP_EDITS: False})


def _edits_change(keep: bool) -> dict:
    return {} if keep else {"keep_edits": False}


def document_delete(*, document: Document) -> None:
    with transaction.atomic():
        document = lock_document(document)
        kb_id = document.kb_id
        shared = document.file and (Document.objects.filter(file=document.file.name).exclude(pk=document.pk).exists()
                                    or DocumentVersion.objects.filter(file=document.file.name).exclude(document=document).exists())
        if document.file and not shared:
            delete_after_commit(document.file)
        for file in versions.version_files(document):  # its history's files go with it
            delete_after_commit(file)
        was_serving = document.status == DocumentStatus.READY
        record(Action.DOCUMENT_DELETE, obj=document, changes={
            "source_name": document.source_name, "version": document.version, "status": document.status,
            "sha256": document.sha256})
        document.delete()
        if was_serving:
            kb_bump_version(kb_id=kb_id)
            schedule_recalibration(kb_id)


def document_restrict(*, document: Document, groups: Sequence) -> Document:
    """Restrict a document to ``groups`` (empty: readable by every member of its KB).

    A newer version still being processed gets the same restriction, so the
    change survives its swap. The KB version is bumped by ``knowledge.signals``
    when the relation changes, so cached search results expire at once.
    """
    with transaction.atomic():
        current = lock_document(document)
        before = sorted(current.restricted_to_groups.values_list("name", flat=True))
        after = sorted(g.name for g in groups)
        if before != after:
            record(Action.DOCUMENT_RESTRICT, obj=current, changes={"restricted_to_groups": [before, after]})
        for target in [current, *current.replacements.filter(status__in=[DocumentStatus.PENDING, DocumentStatus.PROCESSING])]:
            target.restricted_to_groups.set(groups)
    document.refresh_from_db()
    return document


def document_fields_set(*, document: Document, fields: dict) -> Document:
    """Set the document's own fields (``knowledge.document_fields``; checked by ``fields_clean``), replacing those it
    had; a newer version still being processed gets them too. The KB's version is bumped: cached searches that
    filtered on the old values expire."""
    fields = fields_clean(fields)
    with transaction.atomic():
        current = lock_document(document)
        for target in [current, *current.replacements.filter(status__in=[DocumentStatus.PENDING, DocumentStatus.PROCESSING])]:
            Document.objects.filter(pk=target.pk).update(
                metadata={**(target.metadata or {}), FIELDS_KEY: fields}, updated_at=timezone.now())
        kb_bump_version(kb_id=current.kb_id)
    document.refresh_from_db()
    return document


def iter_ids(values: Iterable) -> list[int]:
    out = []
    for v in values:
        try:
            out.append(int(v))
        except (TypeError, ValueError):
            raise fail(CoreError.INVALID_ID, value=v) from None
    return out
