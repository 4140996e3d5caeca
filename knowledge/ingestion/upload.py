"""Upload intake: the checks every file passes, storing new versions and queueing their ingestion, and the
chunking preview (parse and chunk as ingestion would, storing nothing)."""
from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction

from core.audit import Action, record
from core.errors import ValidationFailed, fail
from knowledge.chunking import ChunkDraft
from knowledge.document_fields import KEY as FIELDS_KEY
from knowledge.document_fields import document_fields
from knowledge.errors import KnowledgeError, document_failure_text
from knowledge.ingestion import run, versions
from knowledge.ingestion.text import Chunking, chunk_parsed
from knowledge.models import Document, DocumentStatus, KnowledgeBase
from knowledge.parsers import SUPPORTED_EXTENSIONS, ParseError
from knowledge.parsers.worker import ParseCancelled
from knowledge.services.parsing import parse_bytes


@dataclass
class UploadedItem:
    """One file of an upload, already read: its name and bytes."""

    name: str
    data: bytes
    external_id: str = ""
    metadata: dict = field(default_factory=dict)
    source_url: str = ""  # where the original lives (a source's item; sources/run.py)


@dataclass
class UploadOutcome:
    document: Document
    unchanged: bool


def _extension(name: str) -> str:
    return os.path.splitext(name)[1].lower()


def _storage_name(name: str) -> str:
    """The file name to store under: filesystems cap names at 255 bytes, which CJK names reach at ~85 characters."""
    stem, ext = os.path.splitext(os.path.basename(name))
    while stem and len((stem + ext).encode()) > 200:  # leaves room for the storage's collision suffix
        stem = stem[:-1]
    return (stem or "upload") + ext


def size_check(name: str, size: int) -> None:
    """413 ``file_too_large`` for a file over ``ZHIKU_MAX_UPLOAD_BYTES``: the one place the limit is checked."""
    if size > settings.ZHIKU_MAX_UPLOAD_BYTES:
        raise fail(KnowledgeError.FILE_TOO_LARGE, name=name, size=size, limit=settings.ZHIKU_MAX_UPLOAD_BYTES)


def uploaded_files_to_items(files: Sequence) -> list[UploadedItem]:
    """Read Django ``UploadedFile``s into ``UploadedItem``s, refusing an oversized file before reading it."""
    for f in files:
        if f.size is not None:
            size_check(f.name, f.size)
    return [UploadedItem(name=f.name or "", data=f.read()) for f in files]


def _check_upload(item: UploadedItem) -> None:
    if not item.name or not item.name.strip():
        raise fail(KnowledgeError.NAME_REQUIRED, "file")
    if _extension(item.name) not in SUPPORTED_EXTENSIONS:
        raise fail(KnowledgeError.UNSUPPORTED_TYPE, name=item.name, supported=", ".join(sorted(SUPPORTED_EXTENSIONS)))
    size_check(item.name, len(item.data))
    if not item.data.strip():
        raise fail(KnowledgeError.EMPTY_FILE, name=item.name)


def document_upload(*, kb: KnowledgeBase, items: Sequence[UploadedItem], user=None,
                    restricted_to_groups: Sequence | None = None, chunking: Chunking | None = None,
                    background: bool = False) -> list[UploadOutcome]:
    """Store uploaded files as pending document versions and queue their ingestion.

    Every file is checked (type, size, emptiness) before anything is written, so
    one bad file rejects the whole upload with nothing stored. A file whose
    content equals the serving version of the same source name is not
    re-ingested. ``restricted_to_groups`` limits the new versions to those
    groups (written in the same transaction, so they are never readable
    unrestricted); when None, a new version keeps the restriction of the
    version it replaces. ``chunking`` (checked by ``chunking_check``) is the
    chunk size and overlap to split the new versions with; when None, a new
    version keeps the chunking of the version it replaces (the platform
    defaults for a first version). A file whose content is unchanged is not
    re-ingested unless ``chunking`` splits it differently from the serving
    version. Returns at once; ingestion runs in the background (``background``: behind people's uploads, for
    bulk work such as a folder or a source's sync; ``knowledge.ingestion.run.enqueue_ingest``).
    """
    if not items:
        raise fail(KnowledgeError.NO_FILES)
    if len(items) > settings.ZHIKU_MAX_FILES_PER_UPLOAD:
        raise fail(KnowledgeError.TOO_MANY_FILES, limit=settings.ZHIKU_MAX_FILES_PER_UPLOAD)
    names = [item.name for item in items]
    if len(set(names)) != len(names):
        raise fail(KnowledgeError.DUPLICATE_NAME)
    for item in items:
        _check_upload(item)

    with transaction.atomic():
        return [_store_version(kb, item, user=user, restricted_to_groups=restricted_to_groups, chunking=chunking,
                               background=background) for item in items]


def _store_version(kb: KnowledgeBase, item: UploadedItem, *, user, restricted_to_groups: Sequence | None,
                   chunking: Chunking | None, background: bool) -> UploadOutcome:
    """One file of ``document_upload``: the serving or in-flight version when it is the same, else a new pending one."""
    digest = hashlib.sha256(item.data).hexdigest()
    serving = Document.objects.filter(kb=kb, source_name=item.name, status=DocumentStatus.READY).first()
    if serving is not None and serving.sha256 == digest and _same_chunking(serving, chunking):
        return UploadOutcome(serving, unchanged=True)
    in_flight = next((d for d in Document.objects.filter(
        kb=kb, source_name=item.name, sha256=digest,
        status__in=[DocumentStatus.PENDING, DocumentStatus.PROCESSING],
    ) if _same_chunking(d, chunking)), None)
    if in_flight is not None:
        return UploadOutcome(in_flight, unchanged=True)
    last = Document.objects.filter(kb=kb, source_name=item.name).order_by("-version").first()
    chosen = chunking if chunking is not None else Chunking(
        size=serving.chunk_size, overlap=serving.chunk_overlap) if serving is not None else Chunking()
    document = Document(
        kb=kb, source_name=item.name, title=os.path.splitext(os.path.basename(item.name))[0],
        external_id=item.external_id, source_url=item.source_url, doc_type=SUPPORTED_EXTENSIONS[_extension(item.name)],
        size=len(item.data), sha256=digest, status=DocumentStatus.PENDING,
        version=versions.next_number(serving) if serving is not None else (last.version + 1) if last else 1, replaces=serving,
        metadata=_carried_fields(last) | dict(item.metadata), uploaded_by=user if (user and user.is_authenticated) else None,
        chunk_size=chosen.size, chunk_overlap=chosen.overlap,
    )
    document.file.save(_storage_name(item.name), ContentFile(item.data), save=False)
    document.save()
    if restricted_to_groups is not None:
        document.restricted_to_groups.set(restricted_to_groups)
    elif serving is not None:
        document.restricted_to_groups.set(serving.restricted_to_groups.all())
    run.enqueue_ingest(document.pk, background=background)
    record(Action.DOCUMENT_REPLACE if last is not None else Action.DOCUMENT_UPLOAD, actor=document.uploaded_by, obj=document,
           changes={"source_name": item.name, "version": document.version, "size": document.size, "sha256": digest,
                    **({"replaces": serving.pk} if serving is not None else {}),
                    **({"restricted_to_groups": ", ".join(g.name for g in restricted_to_groups)} if restricted_to_groups else {})})
    return UploadOutcome(document, unchanged=False)


def _carried_fields(last: Document | None) -> dict:
    """A new version keeps the fields its editors set on the last one (``knowledge.document_fields``)."""
    fields = document_fields(last.metadata if last is not None else None)
    return {FIELDS_KEY: fields} if fields else {}


def _same_chunking(document: Document, chunking: Chunking | None) -> bool:
    """Whether ``chunking`` (None: keep the document's) splits a file as ``document`` was split."""
    return chunking is None or Chunking(size=document.chunk_size, overlap=document.chunk_overlap).config == chunking.config


def documents_upload_restricted(*, kb: KnowledgeBase, items: Sequence[UploadedItem], user, groups: Sequence = (),
                                chunking: Chunking | None = None) -> list[UploadOutcome]:
    """``document_upload`` with the groups chosen in a form (none given: new versions keep the old restriction)."""
    return document_upload(kb=kb, items=items, user=user, restricted_to_groups=list(groups) if groups else None, chunking=chunking)


@dataclass
class ChunkPreview:
    """How a file would be split: its title, the chunking used and every chunk draft."""

    source_name: str
    title: str
    chunk_size: int
    chunk_overlap: int
    drafts: list[ChunkDraft]
    cut_short: dict | None = None  # where the preview stopped reading (knowledge.parsers.budget), None: all of it

    @property
    def total_chars(self) -> int:
        return sum(len(d.content) for d in self.drafts)

    @property
    def longest(self) -> int:
        return max((len(d.content) for d in self.drafts), default=0)


def document_preview(*, item: UploadedItem, chunking: Chunking, cancelled=None) -> ChunkPreview:
    """Parse and chunk a file as ingestion would, storing nothing.

    The file passes the upload's checks (name, type, size, emptiness); a file
    that cannot be parsed is a 400 with the parse error's code (``corrupt_file``,
    ``undecodable_text``, ...) and its message in the reader's language. The parse
    runs in a child process within the preview budgets (ZHIKU_PREVIEW_*): it reads
    the first pages only and says where it stopped (``cut_short``); ``cancelled()``
    true (the client left) kills it.
    """
    _check_upload(item)
    try:
        bounded = parse_bytes(item.name, item.data, cancelled=cancelled)
        title, drafts = chunk_parsed(bounded.document, item.name, chunking)
    except ParseError as exc:
        raise ValidationFailed(document_failure_text(exc.code, exc.message), code=exc.code, extra={"detail": exc.message}) from None
    except ParseCancelled:
        raise fail(KnowledgeError.CANCELLED) from None
    config = chunking.config
    return ChunkPreview(source_name=item.name, title=title, chunk_size=config.max_chars,
                        chunk_overlap=config.overlap_chars, drafts=drafts, cut_short=bounded.cut_short)
