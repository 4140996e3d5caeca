"""Load a benchmark-style corpus into a KB, one document per passage.

A passage is ``{"id", "title", "text"}``, or ``{"id", "question", "answer"}`` for a FAQ pair.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence

from knowledge.ingestion.run import document_ingest
from knowledge.ingestion.upload import UploadedItem, document_upload
from knowledge.models import KnowledgeBase


def passage_item(passage: dict) -> UploadedItem:
    """The upload for one passage: a FAQ pair as a one-row CSV (问题/答案), anything else as Markdown.

    The CSV becomes a ``faq`` chunk, matched on its question alone as well as on
    the pair; Markdown gets the title (if any) as its heading. The id is the
    file name and the external id; an id-like name is kept out of the embedded text.
    """
    pid = str(passage["id"])
    if passage.get("question") is not None and passage.get("answer") is not None:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["问题", "答案"])
        writer.writerow([" ".join(str(passage["question"]).split()), str(passage["answer"]).strip()])
        return UploadedItem(name=f"{pid}.csv", data=buf.getvalue().encode(), external_id=pid)
    title = " ".join(str(passage.get("title") or "").split())
    heading = f"# {title}\n\n" if title else ""
    return UploadedItem(name=f"{pid}.md", data=f"{heading}{passage['text']}\n".encode(), external_id=pid)


def corpus_ingest(*, kb: KnowledgeBase, passages: Sequence[dict], user=None, batch: int = 20,
                  progress: Callable[[int], None] | None = None) -> None:
    """Ingest passages in this process (see ``passage_item``), the id kept as external id.

    Ingestion normally runs when the upload commits; it is run here directly so
    the caller can time it and so it also works inside an outer transaction.
    """
    for start in range(0, len(passages), batch):
        items = [passage_item(p) for p in passages[start:start + batch]]
        for outcome in document_upload(kb=kb, items=items, user=user):
            document_ingest(document_id=outcome.document.pk)
        if progress:
            progress(min(start + batch, len(passages)))
