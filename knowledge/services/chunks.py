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
from knowledge.ingestion.text import analyzer_for, faq_question, keyword_text
from knowledge.ingestion.vectors import content_hash, embed_questions
from knowledge.models import Chunk, Document, DocumentStatus, KnowledgeBase
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


def chunk_create(*, document: Document, content: str, section_path: Sequence[str] = ()) -> Chunk:
    """Add a chunk written by hand at the end of a ready document: tokenized, embedded and searchable at once.

    It is indexed as an edited chunk is (``chunk_update``): keyword tokens from
    the title, section path and text, the embedding of its enriched text, the KB
    version bumped (the BM25 index adds it, cached results expire). A later
    re-index of the document re-parses the file, so hand-added chunks are not kept.
    """
    content = (content or "").strip()
    if not content:
        raise fail("empty_chunk")
    path = [p.strip() for p in section_path if p and p.strip()]
    with transaction.atomic():
        current = lock_document(document)
        if current.status != DocumentStatus.READY:
            raise fail("document_not_ready", status=DocumentStatus(current.status).label)
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
        record(Action.CHUNK_CREATE, obj=chunk, kb=kb, object_repr=f"{current} #{chunk.ordinal}", changes={"content": content})
        kb_bump_version(kb_id=kb.pk)
    return Chunk.objects.select_related("document").get(pk=chunk.pk)


def chunk_update(*, chunk: Chunk, content: str | None = None, enabled: bool | None = None) -> Chunk:
    """Edit a chunk's text (re-tokenized and re-embedded) or switch it on/off; bumps the KB version."""
    kb = chunk.kb
    before = {"content": chunk.content, "enabled": chunk.enabled}
    with transaction.atomic():
        if content is not None:
            content = content.strip()
            if not content:
                raise fail("empty_chunk", "edit")
            if content != chunk.content:
                prefix = chunk.enriched[: len(chunk.enriched) - len(chunk.content)] if chunk.enriched.endswith(chunk.content) else ""
                chunk.enriched = prefix + content
                chunk.content = content
                title = text_title(chunk.document.title, chunk.document.source_name)
                for name, value in _indexed(kb, title=title, section_path=chunk.section_path, content=content,
                                            enriched=chunk.enriched, metadata=chunk.metadata).items():
                    setattr(chunk, name, value)
                chunk.metadata = {**chunk.metadata, "edited": True}
                if chunk.chunk_type == "faq":
                    _faq_edited(chunk, kb.embedding_model)
        if enabled is not None:
            chunk.enabled = bool(enabled)
        chunk.save()
        kb_bump_version(kb_id=kb.pk)
        changed = diff(before, {"content": chunk.content, "enabled": chunk.enabled})
        if changed:
            record(Action.CHUNK_EDIT, obj=chunk, kb=kb, object_repr=f"{chunk.document} #{chunk.ordinal}", changes=changed)
    return chunk


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
