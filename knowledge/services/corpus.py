"""Load a benchmark-style corpus ({"id","title","text"} per passage) into a KB, one document per passage."""
from __future__ import annotations

from typing import Callable, Sequence

from knowledge.models import KnowledgeBase
from knowledge.services.documents import UploadedItem, document_ingest, document_upload


def corpus_ingest(*, kb: KnowledgeBase, passages: Sequence[dict], user=None, batch: int = 20,
                  progress: Callable[[int], None] | None = None) -> None:
    """Ingest passages in this process (as ``{id}.md`` with the title as heading, the id kept as external id).

    Ingestion normally runs when the upload commits; it is run here directly so
    the caller can time it and so it also works inside an outer transaction.
    """
    for start in range(0, len(passages), batch):
        items = [
            UploadedItem(name=f"{p['id']}.md", data=f"# {p.get('title', '')}\n\n{p['text']}\n".encode(), external_id=str(p["id"]))
            for p in passages[start:start + batch]
        ]
        for outcome in document_upload(kb=kb, items=items, user=user):
            document_ingest(document_id=outcome.document.pk)
        if progress:
            progress(min(start + batch, len(passages)))
