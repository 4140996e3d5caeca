"""Folding a new version into its document at commit, its history rows, and pruning old versions' files.

A document keeps its id for its whole life (knowledge/version_models.py): the row a new version was ingested on
(``replaces`` names the document) gives the document its chunks, file and fields in the committing transaction,
then is deleted and its id kept as an alias of the document, so a client polling it is redirected.
"""
from __future__ import annotations

from django.conf import settings
from django.db.models import Max
from django.db.models.fields.files import FieldFile
from django.utils import timezone

from knowledge.files import delete_after_commit
from knowledge.models import Chunk, Document, DocumentAlias, DocumentStatus, DocumentVersion

# The fields a folded version gives its document (status, progress, claim and metadata are set by the commit).
_CARRIED = ("title", "external_id", "source_url", "doc_type", "size", "sha256", "file", "version", "chunk_size",
            "chunk_overlap", "uploaded_by")


def fold_target(staging: Document, *, lock: bool = True) -> Document | None:
    """The document a version being committed becomes, locked (``lock``: the commit; without, a look ahead of it);
    None when it is a document's first version."""
    qs = Document.objects.filter(kb_id=staging.kb_id, status=DocumentStatus.READY).exclude(pk=staging.pk)
    if lock:
        qs = qs.select_for_update()
    target = qs.filter(pk=staging.replaces_id).first() if staging.replaces_id else None
    return target or qs.filter(source_name=staging.source_name).first()


def next_number(document: Document) -> int:
    """The number a new version of ``document`` gets: past its rows, its history and the versions being ingested."""
    highest = max(document.version,
                  DocumentVersion.objects.filter(document=document).aggregate(n=Max("number"))["n"] or 0,
                  Document.objects.filter(replaces=document).aggregate(n=Max("version"))["n"] or 0)
    return highest + 1


def record_version(*, document_id: int, version: Document, chunk_count: int, replaced_by=None) -> None:
    """The history row of the version just committed; the one it replaces is marked replaced (by whom, when)."""
    now = timezone.now()
    DocumentVersion.objects.filter(document_id=document_id, replaced_at__isnull=True).update(
        replaced_by=replaced_by, replaced_at=now)
    restored = (version.metadata or {}).get("restored_from")
    DocumentVersion.objects.update_or_create(document_id=document_id, number=version.version, defaults={
        "uploaded_by": version.uploaded_by, "uploaded_at": version.created_at or now, "size": version.size,
        "sha256": version.sha256, "chunk_count": chunk_count, "file": version.file.name or "",
        "chunk_size": version.chunk_size, "chunk_overlap": version.chunk_overlap,
        "restored_from": restored if isinstance(restored, int) else None, "replaced_by": None, "replaced_at": None})


def fold(*, staging: Document, target: Document, chunk_count: int, metadata: dict) -> None:
    """Give ``target`` the version ingested on ``staging`` (whose chunks were written under ``target``), in the
    caller's transaction; ``staging``'s id becomes an alias of ``target`` and its row is deleted."""
    Chunk.objects.filter(document_id=staging.pk).delete()  # none are written there; a stale run's, if any
    record_version(document_id=target.pk, version=staging, chunk_count=chunk_count, replaced_by=staging.uploaded_by)
    attnames = [getattr(Document._meta.get_field(name), "attname", name) for name in _CARRIED]
    carried = {attname: getattr(staging, attname) for attname in attnames}
    Document.objects.filter(pk=target.pk).update(
        **carried | {"file": staging.file.name or ""},
        status=DocumentStatus.READY, chunks_done=chunk_count, chunks_total=chunk_count, claim="", error_code="",
        error_message="", metadata=metadata, updated_at=timezone.now())
    target.restricted_to_groups.set(staging.restricted_to_groups.all())
    DocumentAlias.objects.update_or_create(old_id=staging.pk, defaults={"document": target})
    Document.objects.filter(replaces=staging).update(replaces=target)
    Document.objects.filter(pk=staging.pk).delete()
    prune_files(target.pk)


def prune_files(document_id: int) -> None:
    """Delete (after commit) the files of versions older than the newest ZHIKU_DOCUMENT_VERSIONS_KEPT; their rows stay,
    without a file. A file another row still names (a re-index shares its document's file) is kept."""
    old = list(DocumentVersion.objects.filter(document_id=document_id).exclude(file="")
               .order_by("-number")[settings.ZHIKU_DOCUMENT_VERSIONS_KEPT:])
    for version in old:
        name = version.file.name
        DocumentVersion.objects.filter(pk=version.pk).update(file="")
        if not (DocumentVersion.objects.filter(file=name).exists() or Document.objects.filter(file=name).exists()):
            delete_after_commit(version.file)


def version_files(document: Document) -> list:
    """The stored files of a document's history that no other row names (deleted with the document)."""
    files: list[FieldFile] = []
    for version in DocumentVersion.objects.filter(document=document).exclude(file=""):
        name = version.file.name
        if name == document.file.name or any(f.name == name for f in files):
            continue
        if not (Document.objects.filter(file=name).exclude(pk=document.pk).exists()
                or DocumentVersion.objects.filter(file=name).exclude(document=document).exists()):
            files.append(version.file)
    return files


def resolve_alias(*, kb_id: int, document_id: int) -> int | None:
    """The id of the document ``document_id`` now belongs to (an old id of its chain), in the KB; None when none."""
    return DocumentAlias.objects.filter(old_id=document_id, document__kb_id=kb_id).values_list("document_id", flat=True).first()
