"""One ingestion run, its stages top to bottom: claim → parse → chunk → tokens → vectors → commit → keyword
index → recalibration queued. ``document_ingest`` lists them; ``enqueue_ingest`` queues a run (``core.jobs``)."""
from __future__ import annotations

import logging
import time

import numpy as np
from django.db import transaction
from django.utils import timezone

from core import jobs
from core.jsonable import jsonable
from knowledge.chunking import ChunkDraft
from knowledge.ingestion import claims, pinning, versions
from knowledge.ingestion.text import Chunking, analyzer_config, analyzer_for, chunk_parsed, faq_question, keyword_text
from knowledge.ingestion.vectors import content_hash, embed_in_batches, embed_questions, reusable_vectors, stage_vectors
from knowledge.keyword_store import keyword_store
from knowledge.locks import lock_kb_then_document
from knowledge.models import Chunk, Document, DocumentStatus, KnowledgeBase
from knowledge.parsers import ParseError
from knowledge.parsers.worker import ParseCancelled
from knowledge.retrieval.protocols import KBSearchConfig
from knowledge.services.calibration import schedule_recalibration
from knowledge.services.kbs import kb_bump_version
from knowledge.services.parsing import parse_stored

logger = logging.getLogger(__name__)

INGEST_TASK = "knowledge.ingest_document"  # the Celery task (knowledge.tasks) that runs ``document_ingest``


def enqueue_ingest(document_id: int, *, background: bool = False) -> None:
    """Queue ingestion of ``document_id`` once the current transaction commits (see ``core.jobs.queue_only``).

    ``background``: bulk work nobody is waiting on at that moment (the demo KB's files, documents queued again at
    start-up, a source's sync); in thread mode a person's uploads overtake it (``core.jobs``, the two classes). The
    document's ``queued_at`` and ``queued_in_background`` say where it stands (``knowledge.ingestion.queue``).

    In Celery mode a broker that cannot be reached makes this process ingest it: the document row is
    already committed and must not stay pending for ever (the sweeper re-queues it if this process dies too).
    """
    Document.objects.filter(pk=document_id).update(queued_at=timezone.now(), queued_in_background=background)
    jobs.after_commit(INGEST_TASK, _ingest, document_id, what=f"ingestion of document {document_id}",
                      run_here_if_broker_down=True, background=background)


def _ingest(document_id: int) -> None:
    document_ingest(document_id=document_id)


class _ClaimLost(Exception):
    """Another run took the document (this one was presumed dead) or it was deleted: stop quietly."""


def document_ingest(*, document_id: int, force_reembed: bool = False) -> Document | None:
    """Parse, chunk, tokenize and embed one pending document, then swap it in atomically.

    Chunks are written in the same transaction that retires the previous
    version, marks this one ready and bumps the KB version, so searches see the
    old version until the new one is complete. Any failure marks this version
    failed (with its error) and leaves the previous version serving.
    A document that is ready, deleted, or being ingested by a live run is left
    as it is. Vectors are staged as they are embedded, so a run that dies is
    resumed by the next one (knowledge.ingestion.recovery) without embedding twice.
    """
    token = claims.claim_document(document_id)
    document = Document.objects.select_related("kb").filter(pk=document_id).first()
    if token is None or document is None:
        return document
    try:
        with claims.heartbeat(document_id, token):
            _ingest_claimed(document, token, force_reembed=force_reembed)
    except _ClaimLost:
        logger.warning("ingestion of document %s stopped: another run holds it now", document_id)
    except (jobs.Stopping, ParseCancelled):  # the process is shutting down (core.jobs.stop)
        claims.release(document_id, token)
        logger.warning("ingestion of document %s stopped: the process is shutting down; it is pending again", document_id)
    except ParseError as exc:
        _fail(document_id, exc.code, exc.message, token=token)
    except Exception as exc:  # noqa: BLE001 - any failure must mark the version failed, never lose the old one
        logger.exception("ingestion of document %s failed", document_id)
        _fail(document_id, "ingest_error", f"{type(exc).__name__}: {exc}", token=token)
    return Document.objects.select_related("kb").filter(pk=document_id).first() or _folded_into(document)


def _folded_into(document: Document) -> Document | None:
    """The document a version that was folded in now is (its row is gone, its id an alias); None when deleted."""
    served_as = versions.resolve_alias(kb_id=document.kb_id, document_id=document.pk)
    return Document.objects.select_related("kb").filter(pk=served_as).first() if served_as else None


def _ingest_claimed(document: Document, token: str, *, force_reembed: bool) -> None:
    """The stages, in order; each stage's time goes to the document's ``metadata["timings_ms"]``."""
    document_id, kb = document.pk, document.kb
    paused = [0.0]  # seconds a background run waited for people's jobs, left out of its stages' times

    def holding(*, pause: bool = True, **changes) -> None:
        # Shutting down: stop. A background run: wait here while a person's job runs (core.jobs), but never
        # mid-parse (``pause`` false), whose child process keeps its wall-clock budget running.
        if pause:
            paused[0] += jobs.checkpoint()
        else:
            jobs.raise_if_stopping()
        if not claims.still_holds(document_id, token, **changes):
            raise _ClaimLost()

    def on_page(done: int, total: int) -> None:
        # OCR is the slow part of a scan: progress counts its pages (unit "pages") until chunks are embedded.
        holding(pause=False, chunks_done=done, chunks_total=total, metadata={**document.metadata, "ingest_stage": "ocr"})

    t0 = time.perf_counter()
    # In a child process within the parse budgets (knowledge.services.parsing): over one, ResourceLimit fails it.
    parsed = parse_stored(document.file, document.source_name, on_page=on_page, cancelled=jobs.stopping).document
    t1 = time.perf_counter()
    title, drafts = chunk_parsed(parsed, document.source_name, Chunking(size=document.chunk_size, overlap=document.chunk_overlap))
    t2 = time.perf_counter()
    analyzer = analyzer_for(kb)
    tokens = [analyzer.tokenize(keyword_text(title=title, section_path=d.section_path, content=d.content, metadata=d.metadata))
              for d in drafts]
    t3 = time.perf_counter()
    holding(chunks_done=0, chunks_total=len(drafts), title=(parsed.title or document.title)[:500], metadata=document.metadata)
    vectors, question_vectors, reused = _vectors(document, drafts, force_reembed=force_reembed,
                                                 on_progress=lambda done: holding(chunks_done=done))
    t4 = time.perf_counter()
    timings = {"parse": t1 - t0, "chunk": t2 - t1, "tokenize": t3 - t2, "embed": t4 - t3 - paused[0]}
    metadata = {**document.metadata, **jsonable(parsed.metadata or {}), "embeddings_reused": reused,
                "timings_ms": {k: round(v * 1000, 2) for k, v in timings.items()},
                **({"paused_ms": round(paused[0] * 1000, 2)} if paused[0] else {})}
    ahead = pinning.vectors_ahead(document, title=title)  # for the edited chunks a re-ingest keeps (pinning.py)
    served_as = _commit_version(document=document, token=token, drafts=drafts, tokens=tokens, vectors=vectors,
                                question_vectors=question_vectors, analyzer_fingerprint=analyzer.fingerprint, metadata=metadata,
                                title=title, pin_vectors=ahead)
    metadata["timings_ms"]["write"] = round((time.perf_counter() - t4) * 1000, 2)
    Document.objects.filter(pk=served_as).update(metadata=metadata)
    _index_keywords(kb)
    schedule_recalibration(kb.pk, background=document.queued_in_background)


def _vectors(document: Document, drafts: list[ChunkDraft], *, force_reembed: bool, on_progress):
    """Each draft's passage vector and question vector (None but for FAQ chunks), and how many were reused."""
    model_id = document.kb.embedding_model
    questions = [faq_question(d.chunk_type, d.metadata) for d in drafts]
    texts = [d.enriched for d in drafts]
    reuse, reuse_questions = ({}, {}) if force_reembed else reusable_vectors(
        model_id=model_id, texts=texts, document_id=document.pk)
    reused = sum(content_hash(t, model_id) in reuse for t in texts)
    vectors = embed_in_batches(texts, model_id=model_id, reuse=reuse, stage=stage_vectors(document.pk),
                               on_progress=on_progress)
    question_vectors = embed_questions(questions, model_id=model_id, reuse=reuse_questions)
    return vectors, question_vectors, reused


def _commit_version(*, document: Document, token: str, drafts: list[ChunkDraft], tokens: list[list[str]],
                    vectors: list[np.ndarray], question_vectors: list[np.ndarray | None], analyzer_fingerprint: str,
                    metadata: dict, title: str, pin_vectors: dict[str, np.ndarray]) -> int:
    """Swap the new version in: its chunks, ready status and metadata in one transaction. A new version of a document
    is folded into it (knowledge.ingestion.versions: the document keeps its id, its old chunks are replaced, but for
    the edited ones whose text is gone, kept pinned: knowledge.ingestion.pinning); returns the id of the document now
    serving it."""
    kb = document.kb
    with transaction.atomic():
        # The KB row, then the document's (knowledge.locks): concurrent ingestions of one KB commit one at a time.
        current = lock_kb_then_document(kb.pk, document.pk)
        if current is None or current.status != DocumentStatus.PROCESSING or current.claim != token:
            raise _ClaimLost()  # deleted, or taken over by a run that outlived this one's heartbeat
        target = versions.fold_target(current)
        served_as = target.pk if target is not None else document.pk
        edits = pinning.before_swap(document_id=target.pk, drafts=drafts, keep=pinning.keeps_edits(current)) \
            if target is not None else pinning.Plan()
        created = Chunk.objects.bulk_create([
            Chunk(
                document_id=served_as, kb_id=kb.pk, ordinal=d.ordinal, chunk_type=d.chunk_type,
                content=d.content, enriched=d.enriched, content_hash=content_hash(d.enriched, kb.embedding_model),
                section_path=list(d.section_path), page_start=d.page_start, page_end=d.page_end,
                tokens=tok, tokens_fingerprint=analyzer_fingerprint, embedding=vec, question_embedding=qvec,
                metadata=edits.draft_metadata(i, d),
            )
            for i, (d, tok, vec, qvec) in enumerate(zip(drafts, tokens, vectors, question_vectors, strict=True))
        ], batch_size=500)
        pinned = pinning.after_swap(edits, created=created, kb=kb, title=title, version=current.version, vectors=pin_vectors)
        pinning.report(metadata, edits if target is not None else None, pinned=pinned, version=current.version)
        count = len(drafts) + pinned
        claims.discard_staged(document.pk)
        if target is not None:
            versions.fold(staging=current, target=target, chunk_count=count, metadata=metadata)
        else:
            Document.objects.filter(pk=document.pk).update(
                status=DocumentStatus.READY, chunks_done=count, chunks_total=count, replaces=None, claim="",
                metadata=metadata,
            )
            versions.record_version(document_id=document.pk, version=current, chunk_count=count)
        kb_bump_version(kb_id=kb.pk)
    return served_as


def _index_keywords(kb: KnowledgeBase) -> None:
    """Bring the KB's BM25 index up to the version just committed (stored for every process: Redis and its row),
    so no search waits to build it. A failure leaves it to the first search, as before: the version is ready."""
    try:
        keyword_store().get_index(KBSearchConfig(kb_id=kb.pk, embedding_model=kb.embedding_model,
                                                 analyzer=analyzer_config(kb)))
    except Exception:  # noqa: BLE001 - the keyword index is rebuilt by the next search; ingestion succeeded
        logger.warning("keyword index of KB %s not updated after ingestion", kb.pk, exc_info=True)


def _fail(document_id: int, code: str, message: str, *, token: str) -> None:
    """Mark the version failed, unless another run took it over meanwhile."""
    Document.objects.filter(pk=document_id, claim=token).update(
        status=DocumentStatus.FAILED, claim="", error_code=code, error_message=message[:2000], updated_at=timezone.now(),
    )
    claims.discard_staged(document_id)
