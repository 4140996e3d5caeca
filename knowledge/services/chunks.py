"""Chunk edits: add a chunk by hand, edit a chunk's text (re-tokenized and re-embedded), switch chunks on or off."""
from __future__ import annotations

import re
from collections.abc import Sequence

from django.db import transaction
from django.db.models import F

from core.audit import Action, diff, record
from core.errors import fail
from knowledge.chunking import enriched_text
from knowledge.embeddings import get_embedder
from knowledge.errors import KnowledgeError
from knowledge.ingestion.text import analyzer_for, faq_question, keyword_text
from knowledge.ingestion.vectors import content_hash, embed_questions
from knowledge.locks import lock_kb_then_document
from knowledge.models import Chunk, ChunkRevision, Document, DocumentStatus, KnowledgeBase, RevisionKind
from knowledge.revisions import revision_add
from knowledge.services.documents import lock_document
from knowledge.services.kbs import kb_bump_version
from knowledge.titles import text_title


def _indexed(kb: KnowledgeBase, *, title: str, section_path: Sequence[str], content: str, enriched: str,
             metadata: dict | None = None) -> dict:
    """The search fields of one chunk written or edited by hand: keyword tokens, embedding, content hash."""
    analyzer = analyzer_for(kb)
    return {
        "tokens": analyzer.tokenize(keyword_text(title=title, section_path=section_path, content=content, metadata=metadata)),
        "tokens_fingerprint": analyzer.fingerprint,
        "embedding": get_embedder(kb.embedding_model).embed_passages([enriched])[0],
        "content_hash": content_hash(enriched, kb.embedding_model),
    }


def chunk_create(*, document: Document, content: str, section_path: Sequence[str] = (), user=None) -> Chunk:
    """Add a chunk written by hand at the end of a ready document: tokenized, embedded and searchable at once.

    It is indexed as an edited chunk is (``chunk_update``): keyword tokens from
    the title, section path and text, the embedding of its enriched text, the KB
    version bumped (the BM25 index adds it, cached results expire). Its first revision (``create``) is
    written with it, by ``user`` (else the request's person). A later re-index of the document keeps it, as a pinned
    chunk, unless the new chunks hold its text (knowledge/ingestion/pinning.py).
    """
    content = (content or "").strip()
    if not content:
        raise fail(KnowledgeError.EMPTY_CHUNK)
    path = [p.strip() for p in section_path if p and p.strip()]
    with transaction.atomic():
        current = lock_document(document)
        if current.status != DocumentStatus.READY:
            raise fail(KnowledgeError.DOCUMENT_NOT_READY, status=DocumentStatus(current.status).label)
        kb = current.kb
        title = text_title(current.title, current.source_name)
        enriched = enriched_text(title=title, section_path=path, content=content)
        last = Chunk.objects.filter(document=current).order_by("-ordinal").values_list("ordinal", flat=True).first()
        chunk = Chunk.objects.create(
            document=current, kb=kb, ordinal=0 if last is None else last + 1, chunk_type="text", content=content,
            enriched=enriched, section_path=path, metadata={"manual": True},
            **_indexed(kb, title=title, section_path=path, content=content, enriched=enriched),
        )
        Document.objects.filter(pk=current.pk).update(chunks_total=F("chunks_total") + 1, chunks_done=F("chunks_done") + 1)
        revision_add(chunk=chunk, kind=RevisionKind.CREATE, before="", after=content, document_version=current.version,
                     user=user)
        record(Action.CHUNK_CREATE, obj=chunk, kb=kb, object_repr=f"{current} #{chunk.ordinal}", changes={"content": content})
        kb_bump_version(kb_id=kb.pk)
    return Chunk.objects.select_related("document").get(pk=chunk.pk)


def chunk_update(*, chunk: Chunk, content: str | None = None, enabled: bool | None = None, user=None,
                 kind: str = RevisionKind.EDIT, reverts: int | None = None) -> Chunk:
    """Edit a chunk's text (re-tokenized and re-embedded) or switch it on/off; bumps the KB version.

    A change of the text is recorded as the chunk's next revision (``kind``: an edit, or a revert of revision
    ``reverts``; knowledge/revision_models.py), by ``user`` (else the request's person), and marks the chunk
    ``edited`` (a re-ingest keeps it: knowledge/ingestion/pinning.py) unless the text is back to the file's own.
    The KB row, the document's and the chunk's are locked first (knowledge/locks.py), so the edit never interleaves
    with a re-ingest's swap; 404 ``chunk_not_found`` when the swap took the chunk away meanwhile.
    """
    kb = chunk.kb
    with transaction.atomic():
        document = lock_kb_then_document(kb.pk, chunk.document_id)
        stored = Chunk.objects.select_for_update().filter(pk=chunk.pk).values("content", "enriched", "enabled", "metadata").first()
        if document is None or stored is None:
            raise fail(KnowledgeError.CHUNK_NOT_FOUND)
        for name, value in stored.items():  # the row as it is now, not as the caller read it
            setattr(chunk, name, value)
        text_before = chunk.content
        before = {"content": text_before, "enabled": chunk.enabled}
        if content is not None:
            content = content.strip()
            if not content:
                raise fail(KnowledgeError.EMPTY_CHUNK, "edit")
            if content != chunk.content:
                _edit_text(chunk, content, kb)
                revision_add(chunk=chunk, kind=kind, before=text_before, after=content,
                             document_version=document.version, user=user, reverts=reverts)
        if enabled is not None:
            chunk.enabled = bool(enabled)
        chunk.save()
        kb_bump_version(kb_id=kb.pk)
        changed = diff(before, {"content": chunk.content, "enabled": chunk.enabled})
        if changed:
            record(Action.CHUNK_EDIT, obj=chunk, kb=kb, object_repr=f"{chunk.document} #{chunk.ordinal}", changes=changed)
    return chunk


def _edit_text(chunk: Chunk, content: str, kb: KnowledgeBase) -> None:
    """Give ``chunk`` its new text: enriched text, keyword tokens, embedding, FAQ question, the ``edited`` mark."""
    prefix = chunk.enriched[: len(chunk.enriched) - len(chunk.content)] if chunk.enriched.endswith(chunk.content) else ""
    chunk.enriched = prefix + content
    chunk.content = content
    title = text_title(chunk.document.title, chunk.document.source_name)
    for name, value in _indexed(kb, title=title, section_path=chunk.section_path, content=content,
                                enriched=chunk.enriched, metadata=chunk.metadata).items():
        setattr(chunk, name, value)
    metadata = {**chunk.metadata, "edited": True}
    if _back_to_the_file(chunk, content):
        metadata.pop("edited")  # the file's own text again: nothing for a re-ingest to keep
    chunk.metadata = metadata
    if chunk.chunk_type == "faq":
        _faq_edited(chunk, kb.embedding_model)


def _back_to_the_file(chunk: Chunk, content: str) -> bool:
    """Whether ``content`` is the text the chunk had from its file before its first edit (a parsed chunk, not
    pinned: a pinned chunk's first text is an older file's)."""
    if chunk.metadata.get("manual") or chunk.metadata.get("pinned"):
        return False
    first = ChunkRevision.objects.filter(chunk_id=chunk.pk, number=1, kind=RevisionKind.EDIT).values_list(
        "content_before", flat=True).first()
    return first is not None and first == content


_FAQ_TEXT = re.compile(r"^\s*问[:：]\s*(?P<question>.*?)\s*\n\s*答[:：]\s*(?P<answer>.*?)\s*$", re.DOTALL)


def _faq_edited(chunk: Chunk, model_id: str) -> None:
    """Keep an edited FAQ chunk's question, answer and question vector in step with its new text.

    Text still in the ``问：…\n答：…`` form gives the new question (re-embedded when
    it changed); any other text has no question of its own, so the chunk is
    matched on its whole text only (question vector cleared).
    """
    found = _FAQ_TEXT.match(chunk.content)
    old_question = faq_question(chunk.chunk_type, chunk.metadata)
    metadata = {k: v for k, v in chunk.metadata.items() if k not in ("question", "answer")}
    if found and found.group("question"):
        metadata.update(question=found.group("question"), answer=found.group("answer"))
    chunk.metadata = metadata
    question = faq_question(chunk.chunk_type, metadata)
    if not question:
        chunk.question_embedding = None
    elif question != old_question or chunk.question_embedding is None:
        chunk.question_embedding = embed_questions([question], model_id=model_id)[0]


def chunks_set_enabled(*, chunks, enabled: bool) -> int:
    """Switch chunks on or off through ``chunk_update`` (one version bump each); returns how many changed."""
    changed = 0
    with transaction.atomic():
        for chunk in chunks:
            if chunk.enabled != enabled:
                chunk_update(chunk=chunk, enabled=enabled)
                changed += 1
    return changed
