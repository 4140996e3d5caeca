"""FAQ entries added by hand (the KB health page's "add as an FAQ entry"): searchable at once, kept on re-index.

Each KB keeps them in one document of its own, ``FAQ_SOURCE_NAME``: a CSV with a 问题,答案 header, the form the
tabular parser reads as question–answer pairs (knowledge/parsers/tabular.py). An entry is written to the file and
added as a ``faq`` chunk in the same transaction, indexed as a hand-written chunk is (``chunks._indexed``) and
matched on its question alone too (its question vector), so a re-index of the document re-parses the same
entries and a chat question worded as the entry is answered from it straight away.
"""
from __future__ import annotations

import csv
import hashlib
import io

from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import F

from core.audit import Action, record
from core.errors import fail
from knowledge.chunking import enriched_text
from knowledge.errors import KnowledgeError
from knowledge.ingestion.text import faq_question
from knowledge.ingestion.vectors import embed_questions
from knowledge.models import Chunk, Document, DocumentStatus, KnowledgeBase
from knowledge.services.chunks import _indexed
from knowledge.services.kbs import kb_bump_version

FAQ_SOURCE_NAME = "faq-entries.csv"
FAQ_TITLE = "常见问题"
MAX_QUESTION_CHARS = 1000
MAX_ANSWER_CHARS = 5000


def _csv_bytes(rows: list[tuple[str, str]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["问题", "答案"])
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


def faq_document(kb: KnowledgeBase, *, user=None) -> Document:
    """The KB's document of hand-added FAQ entries, created (ready, no entries yet) the first time; locked."""
    document = Document.objects.select_for_update().filter(kb=kb, source_name=FAQ_SOURCE_NAME).order_by("-id").first()
    if document is None:
        data = _csv_bytes([])
        document = Document(kb=kb, title=FAQ_TITLE, source_name=FAQ_SOURCE_NAME, doc_type="csv", size=len(data),
                            sha256=hashlib.sha256(data).hexdigest(), status=DocumentStatus.READY, uploaded_by=user)
        document.file.save(FAQ_SOURCE_NAME, ContentFile(data), save=False)
        document.save()
    return document


def faq_entry_add(*, kb: KnowledgeBase, question: str, answer: str, user=None) -> Chunk:
    """Add the FAQ entry ``question`` → ``answer`` to ``kb``: written to its FAQ document and searchable at once."""
    question, answer = " ".join((question or "").split()), (answer or "").strip()
    if not question or not answer:
        raise fail(KnowledgeError.EMPTY_CHUNK)
    if len(question) > MAX_QUESTION_CHARS or len(answer) > MAX_ANSWER_CHARS:
        raise fail(KnowledgeError.FAQ_TOO_LONG, question=MAX_QUESTION_CHARS, answer=MAX_ANSWER_CHARS)
    with transaction.atomic():
        document = faq_document(kb, user=user)
        if document.status != DocumentStatus.READY:
            raise fail(KnowledgeError.DOCUMENT_NOT_READY, status=DocumentStatus(document.status).label)
        rows = [(c.metadata.get("question", ""), c.metadata.get("answer", ""))
                for c in Chunk.objects.filter(document=document, chunk_type="faq").order_by("ordinal").only("metadata")]
        data = _csv_bytes([*rows, (question, answer)])
        old_file = document.file.name
        document.file.save(FAQ_SOURCE_NAME, ContentFile(data), save=False)
        Document.objects.filter(pk=document.pk).update(
            file=document.file.name, size=len(data), sha256=hashlib.sha256(data).hexdigest(),
            chunks_total=F("chunks_total") + 1, chunks_done=F("chunks_done") + 1)
        if old_file and old_file != document.file.name:
            transaction.on_commit(lambda: document.file.storage.delete(old_file))
        content = f"问：{question}\n答：{answer}"
        enriched = enriched_text(title=FAQ_TITLE, section_path=[], content=content)
        metadata = {"question": question, "answer": answer, "manual": True}
        last = Chunk.objects.filter(document=document).order_by("-ordinal").values_list("ordinal", flat=True).first()
        chunk = Chunk.objects.create(
            document=document, kb=kb, ordinal=0 if last is None else last + 1, chunk_type="faq", content=content,
            enriched=enriched, section_path=[], metadata=metadata,
            question_embedding=embed_questions([faq_question("faq", metadata)], model_id=kb.embedding_model)[0],
            **_indexed(kb, title=FAQ_TITLE, section_path=[], content=content, enriched=enriched, metadata=metadata),
        )
        record(Action.CHUNK_CREATE, obj=chunk, kb=kb, object_repr=f"{document} #{chunk.ordinal}",
               changes={"question": question, "answer": answer})
        kb_bump_version(kb_id=kb.pk)
    return chunk
