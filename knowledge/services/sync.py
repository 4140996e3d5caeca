"""Mirror a folder into a KB: ingest new and changed files, remove deleted ones."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from core.errors import ApplicationError, fail
from knowledge.errors import KnowledgeError
from knowledge.ingestion.upload import UploadedItem, document_upload
from knowledge.models import Document, DocumentStatus, KnowledgeBase
from knowledge.parsers import SUPPORTED_EXTENSIONS
from knowledge.services.documents import document_delete


@dataclass
class SyncReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)
    document_ids: list[int] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)


def collect_files(root: Path, extra: list[Path] | None = None) -> dict[str, Path]:
    """Supported files under ``root`` (recursive, hidden entries skipped), keyed by their path relative to ``root``."""
    if not root.is_dir():
        raise fail(KnowledgeError.NOT_A_FOLDER, path=root)
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part.startswith(".") for part in rel.parts) or not path.is_file():
            continue
        if path.suffix.lower() in SUPPORTED_EXTENSIONS:
            found[rel.as_posix()] = path
    for path in extra or []:
        found[path.name] = path
    return found


def kb_sync_files(*, kb: KnowledgeBase, files: dict[str, Path], user=None, remove_missing: bool = True) -> SyncReport:
    """Make the KB's documents match ``files`` (source name → path). Idempotent: a second run changes nothing.

    Bulk work: the files are queued behind people's uploads (``document_upload``'s ``background``)."""
    report = SyncReport()
    serving = {d.source_name: d for d in Document.objects.filter(kb=kb).exclude(status=DocumentStatus.FAILED)}
    for name, path in files.items():
        data = path.read_bytes()
        latest = Document.objects.filter(kb=kb, source_name=name).order_by("-version").first()
        if latest is not None and latest.status == DocumentStatus.FAILED and latest.sha256 == hashlib.sha256(data).hexdigest():
            # The same bytes failed before: report it again rather than adding another failed version.
            report.rejected[name] = f"{latest.error_code}: {latest.error_message} (unchanged since it failed; retry it to try again)"
            continue
        try:
            outcome = document_upload(kb=kb, items=[UploadedItem(name=name, data=data)], user=user, background=True)[0]
        except ApplicationError as exc:
            report.rejected[name] = f"{exc.code}: {exc.message}"
            continue
        report.document_ids.append(outcome.document.pk)
        if outcome.unchanged:
            report.unchanged.append(name)
        elif name in serving:
            report.updated.append(name)
        else:
            report.added.append(name)
    if remove_missing:
        with transaction.atomic():
            for document in Document.objects.filter(kb=kb).exclude(source_name__in=list(files)):
                report.removed.append(document.source_name)
                document_delete(document=document)
    return report
