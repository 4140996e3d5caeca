"""The runner's per-item stages: a fetched item becomes a new document version, an unchanged one is counted,
a failed one is recorded (its previous version keeps serving), and items a complete scan no longer saw are removed.

Names: a connector names each item's document (``Fetched.name``, unique within its source). A source owns the
names of its items (``SourceItem``); a fetched item whose name is held by a document this source does not own
(a manual upload, another source's item) is refused with ``source_name_taken`` and that document is left alone,
so two sources, or a source and a person uploading, never overwrite each other's documents.
"""
from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import transaction

from core.errors import ApplicationError, failure_text
from knowledge.ingestion.upload import UploadedItem, document_upload
from knowledge.models import Document, DocumentStatus
from knowledge.services.documents import document_delete
from sources.kinds.base import Failed, Fetched, Known, Unchanged
from sources.models import Source, SourceItem, SourceRun

logger = logging.getLogger(__name__)


def known_items(source: Source) -> tuple[dict[str, SourceItem], dict[str, Known]]:
    """What the previous runs kept, by key: the rows, and what the connector is told (``Known``).

    An item whose document failed to ingest is told with no revision, so the connector fetches it again.
    """
    rows = {item.key: item for item in source.items.select_related("document")}
    known = {}
    for key, item in rows.items():
        failed = item.document is None or item.document.status == DocumentStatus.FAILED
        known[key] = Known(revision="" if failed else item.revision, state=dict(item.state or {}))
    return rows, known


def record_error(run: SourceRun, *, key: str, url: str, code: str, message: str) -> None:
    """Count one failed item; keep its error while the run's list has room (``ZHIKU_SOURCES_MAX_RUN_ERRORS``)."""
    run.failed += 1
    if len(run.errors) < settings.ZHIKU_SOURCES_MAX_RUN_ERRORS:
        run.errors.append({"key": key[:2000], "url": url[:2000], "code": code, "message": message[:1000]})


def item_failed(run: SourceRun, item: Failed) -> None:
    record_error(run, key=item.key, url=item.url, code=item.code, message=failure_text(item.code, item.message))


def item_unchanged(run: SourceRun, rows: dict[str, SourceItem], item: Unchanged) -> None:
    row = rows.get(item.key)
    if row is None:  # a connector's mistake: nothing is known of it, so nothing can be kept
        record_error(run, key=item.key, url="", code="source_item_failed",
                     message=failure_text("source_item_failed", "the connector said unchanged for an item it was never given"))
        return
    fields: dict[str, Any] = {"last_seen_run": run}
    if item.state is not None:
        fields["state"] = dict(item.state)
    SourceItem.objects.filter(pk=row.pk).update(**fields)
    run.unchanged += 1


def _name_taken(source: Source, name: str, row: SourceItem | None) -> bool:
    """Whether ``name`` is held in the KB by a document, or an item of another source, this source does not own."""
    if row is not None and row.name == name:
        return False
    if SourceItem.objects.filter(source__kb_id=source.kb_id, name=name).exists():
        return True
    return Document.objects.filter(kb_id=source.kb_id, source_name=name).exists()


def item_fetched(run: SourceRun, source: Source, rows: dict[str, SourceItem], item: Fetched) -> None:
    """Upload the item's bytes as a new version of its document (the old one serves until the new one is ready)."""
    row = rows.get(item.key)
    if _name_taken(source, item.name, row):
        record_error(run, key=item.key, url=item.url, code="source_name_taken",
                     message=f"{failure_text('source_name_taken', '')} ({item.name})")
        return
    url = item.url if item.url.lower().startswith(("http://", "https://")) else ""  # pages link to it
    upload = UploadedItem(name=item.name, data=item.data, source_url=url[:2000],
                          metadata={"source": {"id": source.pk, "kind": source.kind, "key": item.key[:500]}})
    with transaction.atomic():
        outcome = document_upload(kb=source.kb, items=[upload], user=source.created_by, background=True)[0]
        document = outcome.document
        changes = {k: v for k, v in (("source_url", url[:2000]), ("title", item.title[:500])) if v and getattr(document, k) != v}
        if changes:
            Document.objects.filter(pk=document.pk).update(**changes)
        renamed_from = row.name if row is not None and row.name != item.name else None
        values = dict(revision=item.revision[:500], state=dict(item.state), name=item.name, url=item.url[:2000],
                      title=item.title[:500], document=document, last_seen_run=run)
        if row is None:
            rows[item.key] = SourceItem.objects.create(source=source, key=item.key, **values)
        else:
            SourceItem.objects.filter(pk=row.pk).update(**values)
    if outcome.unchanged:
        run.unchanged += 1
    elif row is not None and row.document_id is not None:
        run.updated += 1
    else:
        run.added += 1
    if renamed_from:
        _delete_documents(source, renamed_from)


def handle(run: SourceRun, source: Source, rows: dict[str, SourceItem], item) -> None:
    """One item of the scan; whatever goes wrong with it is that item's error, never the run's."""
    try:
        if isinstance(item, Fetched):
            item_fetched(run, source, rows, item)
        elif isinstance(item, Unchanged):
            item_unchanged(run, rows, item)
        elif isinstance(item, Failed):
            item_failed(run, item)
        else:
            raise TypeError(f"a connector yielded {type(item).__name__}")
    except ApplicationError as exc:  # the upload's own checks: type, size, emptiness
        record_error(run, key=getattr(item, "key", ""), url=getattr(item, "url", ""), code=exc.code, message=exc.message)
    except Exception as exc:  # noqa: BLE001 - one item never stops the run; the log has the traceback
        logger.exception("source %s run %s: item %r failed", source.pk, run.pk, getattr(item, "key", item))
        record_error(run, key=str(getattr(item, "key", "")), url=getattr(item, "url", ""), code="source_item_failed",
                     message=failure_text("source_item_failed", f"{type(exc).__name__}: {exc}"))


def _delete_documents(source: Source, name: str) -> None:
    """Every version of the document named ``name`` in the source's KB (the serving one and any newer one)."""
    for document in Document.objects.filter(kb_id=source.kb_id, source_name=name).order_by("-version"):
        try:
            document_delete(document=document)
        except ApplicationError:  # deleted meanwhile
            continue


def remove_unseen(run: SourceRun, source: Source, seen: set[str]) -> None:
    """After a complete scan: remove the documents of items the source no longer has, and forget those items."""
    for row in [r for r in source.items.all() if r.key not in seen]:
        try:
            _delete_documents(source, row.name)
            row.delete()
            run.removed += 1
        except Exception as exc:  # noqa: BLE001 - one removal never stops the others
            logger.exception("source %s run %s: removing %r failed", source.pk, run.pk, row.key)
            record_error(run, key=row.key, url=row.url, code="source_item_failed",
                         message=failure_text("source_item_failed", f"{type(exc).__name__}: {exc}"))
