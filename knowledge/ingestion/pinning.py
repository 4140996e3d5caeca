"""A re-ingest keeps what people wrote: an edited or hand-added chunk whose text the new chunks no longer hold stays,
*pinned* after them, unless the editor asked otherwise.

A re-index or a new version replaces all of a document's chunks (knowledge/ingestion/run.py, ``_commit_version``).
In that transaction, under the KB's row lock (which every chunk writer takes first: knowledge/services/chunks.py),
each chunk marked ``edited`` or ``manual`` is looked for among the new chunks, its text compared normalised (NFKC,
white space removed) and found when a new chunk's text equals or contains it:

- found: the chunk goes with the old ones, its revisions move to the new chunk holding its text (marked ``edited``
  when the texts are equal), so nothing is kept twice;
- not found, kept (the default): the chunk's own row stays, after the new chunks, ``pinned``, re-indexed for the new
  version (keyword tokens, enriched text and vector under the new title; its pages cleared, they were the old
  file's), searchable, with its revisions and a ``pin`` revision more;
- not found, ``keep_edits`` false on the re-index or upload (the ingesting row's metadata): it goes, revisions too.

The document's ``metadata["edits"]`` reports what happened (kept, dropped, found), shown on its page and in the API.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db.models import F, Max, Q
from django.utils import timezone

from core.jsonable import jsonable
from knowledge.chunking import ChunkDraft, enriched_text
from knowledge.embeddings import get_embedder
from knowledge.ingestion import versions
from knowledge.ingestion.text import analyzer_for, keyword_text
from knowledge.ingestion.vectors import content_hash
from knowledge.models import Chunk, Document, KnowledgeBase, RevisionKind
from knowledge.revisions import revision_add, revisions_move

KEEP_EDITS = "keep_edits"  # in the ingesting row's metadata: False drops the edited chunks whose text is gone
REPORT = "edits"  # the document's report of the last re-ingest's edited chunks


def normalised(text: str) -> str:
    """The text as compared: NFKC (full-width forms folded), every white space removed (line breaks in a PDF's
    Chinese text come and go between parses)."""
    return "".join(unicodedata.normalize("NFKC", text or "").split())


def keeps_edits(staging: Document) -> bool:
    return (staging.metadata or {}).get(KEEP_EDITS) is not False


def _edited(document_id: int):
    return Chunk.objects.filter(Q(metadata__edited=True) | Q(metadata__manual=True), document_id=document_id)


@dataclass
class Plan:
    """What a commit does with the replaced document's edited chunks; ``found`` maps a chunk to its new draft."""

    found: dict[int, int] = field(default_factory=dict)
    exact: set[int] = field(default_factory=set)  # the drafts whose text equals an edited chunk's
    pinned: list[Chunk] = field(default_factory=list)
    dropped: int = 0

    def draft_metadata(self, index: int, draft: ChunkDraft) -> dict:
        metadata = jsonable(draft.metadata or {})
        return {**metadata, "edited": True} if index in self.exact else metadata


def before_swap(*, document_id: int, drafts: list[ChunkDraft], keep: bool) -> Plan:
    """Decide for each edited chunk of ``document_id``, delete the chunks that go and move the ones that stay for now
    out of the new drafts' ordinals. Call in the commit's transaction, before the new chunks are written."""
    texts = [normalised(d.content) for d in drafts]
    first: dict[str, int] = {}
    for i, text in enumerate(texts):
        first.setdefault(text, i)
    plan = Plan()
    for chunk in _edited(document_id).order_by("ordinal"):
        text = normalised(chunk.content)
        at = first.get(text)
        if at is not None:
            plan.exact.add(at)
        elif text:
            at = next((i for i, t in enumerate(texts) if text in t), None)
        if at is not None:
            plan.found[chunk.pk] = at
        elif keep:
            plan.pinned.append(chunk)
        else:
            plan.dropped += 1
    staying = [*plan.found, *(c.pk for c in plan.pinned)]
    Chunk.objects.filter(document_id=document_id).exclude(pk__in=staying).delete()
    if staying:
        # Past every ordinal a staying row has now (the unique ordinal is checked row by row as they move) and every
        # one the new drafts and the pinned chunks will take.
        highest = Chunk.objects.filter(pk__in=staying).aggregate(n=Max("ordinal"))["n"] or 0
        Chunk.objects.filter(pk__in=staying).update(ordinal=F("ordinal") + highest + len(drafts) + len(staying) + 1)
    return plan


def after_swap(plan: Plan, *, created: list[Chunk], kb: KnowledgeBase, title: str, version: int,
               vectors: dict[str, np.ndarray]) -> int:
    """Move the found chunks' revisions to their new chunks and delete them, then pin the others after ``created``,
    re-indexed (``vectors``: ones embedded ahead, by content hash; others are embedded here). Returns how many
    were pinned."""
    for old_id, index in plan.found.items():
        revisions_move(from_chunk_id=old_id, to_chunk_id=created[index].pk)
    Chunk.objects.filter(pk__in=list(plan.found)).delete()
    if not plan.pinned:
        return 0
    analyzer = analyzer_for(kb)
    fields = [_indexed(chunk, kb=kb, title=title, analyzer=analyzer) for chunk in plan.pinned]
    missing = [f["enriched"] for chunk, f in zip(plan.pinned, fields, strict=True)
               if f["content_hash"] != chunk.content_hash and f["content_hash"] not in vectors]
    if missing:  # an edit made while this version was parsed: embedded under the lock, a few chunks at most
        vectors = {**vectors, **{content_hash(t, kb.embedding_model): v for t, v in
                                 zip(missing, get_embedder(kb.embedding_model).embed_passages(missing), strict=True)}}
    for offset, (chunk, indexed) in enumerate(zip(plan.pinned, fields, strict=True)):
        if indexed["content_hash"] != chunk.content_hash:
            indexed["embedding"] = vectors[indexed["content_hash"]]
        Chunk.objects.filter(pk=chunk.pk).update(
            ordinal=len(created) + offset, page_start=None, page_end=None,
            metadata={**chunk.metadata, "pinned": True, "pinned_at_version": version},
            updated_at=timezone.now(), **indexed)  # stamped: the keyword index re-reads rows changed since its build
        revision_add(chunk=chunk, kind=RevisionKind.PIN, before=chunk.content, after=chunk.content,
                     document_version=version)
    return len(plan.pinned)


def _indexed(chunk: Chunk, *, kb: KnowledgeBase, title: str, analyzer: Any) -> dict:
    """A pinned chunk's search fields under the new version's title (its embedding set by the caller when changed)."""
    caption = str((chunk.metadata or {}).get("caption") or "")
    enriched = enriched_text(title=title, section_path=list(chunk.section_path), content=chunk.content, caption=caption)
    return {"enriched": enriched, "content_hash": content_hash(enriched, kb.embedding_model),
            "tokens": analyzer.tokenize(keyword_text(title=title, section_path=chunk.section_path, content=chunk.content,
                                                     metadata=chunk.metadata)),
            "tokens_fingerprint": analyzer.fingerprint}


def vectors_ahead(staging: Document, *, title: str) -> dict[str, np.ndarray]:
    """The vectors the edited chunks of the document ``staging`` will replace need under the new title, embedded
    before the commit takes its locks (a chunk edited meanwhile is embedded in the commit)."""
    target = versions.fold_target(staging, lock=False)
    if target is None or not keeps_edits(staging):
        return {}
    kb = staging.kb
    texts = {}
    for chunk in _edited(target.pk).defer("embedding", "question_embedding"):
        caption = str((chunk.metadata or {}).get("caption") or "")
        enriched = enriched_text(title=title, section_path=list(chunk.section_path), content=chunk.content, caption=caption)
        digest = content_hash(enriched, kb.embedding_model)
        if digest != chunk.content_hash:
            texts[digest] = enriched
    if not texts:
        return {}
    return dict(zip(texts, get_embedder(kb.embedding_model).embed_passages(list(texts.values())), strict=True))


def report(metadata: dict, plan: Plan | None, *, pinned: int, version: int) -> None:
    """Write (or clear) the document's report of its edited chunks at this re-ingest into ``metadata``."""
    metadata.pop(KEEP_EDITS, None)
    metadata.pop(REPORT, None)
    if plan is not None and (pinned or plan.dropped or plan.found):
        metadata[REPORT] = {"version": version, "kept": pinned, "dropped": plan.dropped, "found": len(plan.found)}
