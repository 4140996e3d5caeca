"""Input and output serializers of the REST API: shape and type checks only, no business logic."""
from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.api.fields import MAX_GROUP_NAMES, ItemList, Rule, StrictInput, Text, UploadFile, exactly_one, finite
from core.names import display_name
from knowledge.api.inputs import FORM_BOOLEAN
from knowledge.errors import document_failure_text
from knowledge.ingestion.queue import queue_places
from knowledge.models import AnswerMode, Chunk, ChunkType, Document, FusionMethod, KnowledgeBase, Membership, Role

# --- knowledge bases --------------------------------------------------------

class KBSettingsInput(StrictInput):
    """The retrieval settings shared by create and update; every field optional."""

    rules = (Rule("invalid_threshold", "answer_threshold (the confidence line) is at least score_threshold (the "
                  "not-found gate), the KB's own values standing in for one left out."),)

    description = Text(required=False, allow_blank=True, max_length=20000)
    top_k = serializers.IntegerField(required=False, min_value=1, max_value=100)
    candidates = serializers.IntegerField(required=False, min_value=1, max_value=500)
    rrf_k = serializers.IntegerField(required=False, min_value=0, max_value=10000)
    vector_weight = serializers.FloatField(required=False, min_value=0, max_value=1000, validators=[finite])
    keyword_weight = serializers.FloatField(required=False, min_value=0, max_value=1000, validators=[finite])
    fusion = serializers.ChoiceField(required=False, choices=FusionMethod.choices)
    rerank_enabled = serializers.BooleanField(required=False)
    learn_from_feedback = serializers.BooleanField(
        required=False, help_text="rank the passages confirmed for a question first for it and its paraphrases (labels)")
    score_threshold = serializers.FloatField(required=False, min_value=0, max_value=1, validators=[finite],
                                             help_text="the not-found gate: a relevance below it is not_found")
    answer_threshold = serializers.FloatField(required=False, min_value=0, max_value=1, validators=[finite],
                                              help_text="the confidence line (at least score_threshold): a relevance at or "
                                                        "above it is answered, between the two uncertain")
    not_found_text = Text(required=False, max_length=2000)
    not_found_text_en = Text(required=False, allow_blank=True, max_length=2000,
                             help_text="replied instead to a question asked in English; blank: not_found_text")
    user_words = ItemList(required=False, max_length=10000, child=Text(max_length=100))
    synonyms = ItemList(required=False, max_length=10000, child=ItemList(child=Text(max_length=100), min_length=2, max_length=50))
    # Answer settings (docs/chat.md "Per-KB answer settings").
    answer_mode = serializers.ChoiceField(required=False, choices=AnswerMode.choices,
                                          help_text="llm: the language model when one is configured; extractive: never sent to one")
    answer_model = Text(required=False, allow_blank=True, max_length=200,
                        help_text="one of the offered model choices (GET /api/models/: the environment's ZHIKU_LLM_MODEL and "
                                  "ZHIKU_LLM_MODELS, then the console's endpoints); blank: the site's default")
    system_prompt = Text(required=False, allow_blank=True, max_length=4000, trim_whitespace=False,
                         help_text="put before the fixed rules (answer from the sources, cite [n]); blank: the built-in prompt")
    max_sources = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=20,
                                           help_text="sources given to the answer at most; null: as many as top_k")
    faq_direct_threshold = serializers.FloatField(
        required=False, allow_null=True, min_value=0, max_value=1, validators=[finite],
        help_text="a FAQ ranked first with at least this relevance is the answer, verbatim; null: off")


class KBCreateInput(KBSettingsInput):
    name = Text(max_length=200)
    embedding_model = Text(required=False, max_length=300)


class KBUpdateInput(KBSettingsInput):
    """PATCH sends any subset; PUT must send the name (other settings keep their values when left out)."""

    name = Text(max_length=200)


class KBOutput(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.get_username", read_only=True)
    role = serializers.SerializerMethodField()
    document_count = serializers.IntegerField(read_only=True)
    chunk_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = KnowledgeBase
        fields = [
            "id", "name", "description", "owner", "role", "embedding_model", "embedding_dim",
            "top_k", "candidates", "rrf_k", "vector_weight", "keyword_weight", "fusion",
            "rerank_enabled", "score_threshold", "answer_threshold", "not_found_text", "not_found_text_en", "user_words", "synonyms",
            "answer_mode", "answer_model", "system_prompt", "max_sources", "faq_direct_threshold",
            "learn_from_feedback", "version", "document_count", "chunk_count", "created_at", "updated_at",
        ]
        read_only_fields = fields

    def get_role(self, kb) -> str | None:
        role = getattr(kb, "caller_role", None)
        return str(role) if role else None


# --- memberships ------------------------------------------------------------

class MembershipCreateInput(StrictInput):
    """Exactly one of user_id, username, group_id, group (a picker sends the ids; names stay for older clients)."""

    user_id = serializers.IntegerField(required=False, min_value=1, max_value=2**31 - 1)
    username = Text(required=False, max_length=150)
    group_id = serializers.IntegerField(required=False, min_value=1, max_value=2**31 - 1)
    group = Text(required=False, max_length=150)
    role = serializers.ChoiceField(choices=Role.choices)

    rules = (Rule("user_xor_group", "Exactly one of user_id, username, group_id or group.",
                  exactly_one("user_id", "username", "group_id", "group"), body_required=True),)


class MembershipUpdateInput(StrictInput):
    role = serializers.ChoiceField(choices=Role.choices)


class MembershipOutput(serializers.ModelSerializer):
    user = serializers.CharField(source="user.get_username", read_only=True, allow_null=True, default=None)
    group = serializers.CharField(source="group.name", read_only=True, allow_null=True, default=None)
    user_id = serializers.IntegerField(read_only=True, allow_null=True)
    group_id = serializers.IntegerField(read_only=True, allow_null=True)
    display_name = serializers.SerializerMethodField(help_text="The person's name (their username when they have none), "
                                                                "or the group's name")

    class Meta:
        model = Membership
        fields = ["id", "user", "user_id", "display_name", "group", "group_id", "role", "created_at"]
        read_only_fields = fields

    def get_display_name(self, membership: Membership) -> str:
        if membership.user is not None:
            return display_name(membership.user)
        return membership.group.name if membership.group is not None else ""


# --- documents --------------------------------------------------------------

class ChunkingFields(StrictInput):
    """The chunking chosen for an upload or a preview (documented for the schema; the view reads the form)."""

    rules = (Rule("invalid_chunking", "chunk_overlap is at most half of chunk_size (its default when left out)."),)

    chunk_size = serializers.IntegerField(
        required=False, min_value=50, max_value=4000,
        help_text="Longest chunk in characters (default: ZHIKU_CHUNK_MAX_CHARS, 800). Out of range: 400 `invalid_chunking`.",
    )
    chunk_overlap = serializers.IntegerField(
        required=False, min_value=0, max_value=1000,
        help_text="Characters repeated from the end of the previous chunk, at most half the chunk size "
                  "(default: ZHIKU_CHUNK_OVERLAP_CHARS, 0). Out of range: 400 `invalid_chunking`.",
    )


class DocumentUploadInput(ChunkingFields):
    """The multipart upload (documented for the schema; the view reads ``request.FILES``)."""

    files = ItemList(child=UploadFile(), min_length=1, max_length=settings.ZHIKU_MAX_FILES_PER_UPLOAD,
                                  help_text="At most ZHIKU_MAX_FILES_PER_UPLOAD files (20); more: 400 `too_many_files`.")
    restricted_to_groups = Text(
        required=False, allow_blank=True, max_length=MAX_GROUP_NAMES * 151,
        help_text=f"Comma-separated group names (at most {MAX_GROUP_NAMES}); only their members (and editors) may read "
                  "these documents.",
    )
    keep_edits = serializers.ChoiceField(
        choices=FORM_BOOLEAN, required=False, default="true",
        help_text="A new version keeps the chunks edited or added by hand whose text its chunks no longer hold, pinned "
                  "after them (default, true); false drops them (docs/chunks.md). A form's boolean: true, True, 1, yes, on "
                  "or false, False, 0, no, off.")


class ReindexInput(StrictInput):
    keep_edits = serializers.BooleanField(
        required=False, default=True,
        help_text="Keep the chunks edited or added by hand whose text the new chunks no longer hold, pinned after them "
                  "(default); false drops them (docs/chunks.md).")


class DocumentPreviewInput(ChunkingFields):
    file = UploadFile()


class PreviewChunkOutput(serializers.Serializer):
    ordinal = serializers.IntegerField()
    chunk_type = serializers.ChoiceField(choices=ChunkType.choices)
    content = serializers.CharField()
    chars = serializers.IntegerField()
    section_path = serializers.ListField(child=serializers.CharField())
    page_start = serializers.IntegerField(allow_null=True)
    page_end = serializers.IntegerField(allow_null=True)


class PreviewCutShortOutput(serializers.Serializer):
    budget = serializers.ChoiceField(choices=["pages", "ocr_pages", "time", "characters"],
                                     help_text="The preview budget that stopped the reading")
    limit = serializers.IntegerField(help_text="That budget: pages, scanned pages, seconds or characters")
    pages_read = serializers.IntegerField(allow_null=True, help_text="The pages read, where the file has pages")
    message = serializers.CharField(help_text="The same in words, in the reader's language")


class ChunkPreviewOutput(serializers.Serializer):
    source_name = serializers.CharField()
    title = serializers.CharField(allow_blank=True)
    chunk_size = serializers.IntegerField(help_text="The chunk size used (the platform default when none was sent)")
    chunk_overlap = serializers.IntegerField()
    count = serializers.IntegerField(help_text="How many chunks the file makes")
    total_chars = serializers.IntegerField()
    longest = serializers.IntegerField(help_text="Characters of the longest chunk")
    truncated = serializers.BooleanField(help_text="True when only the first chunks are listed")
    cut_short = PreviewCutShortOutput(allow_null=True, help_text="Set when the preview read only the start of the "
                                      "file (its budgets, ZHIKU_PREVIEW_*); null when it read all of it")
    chunks = PreviewChunkOutput(many=True)


_FIELD_SCALAR = [{"type": "string", "maxLength": 500}, {"type": "number"}, {"type": "boolean"}]


@extend_schema_field({  # what knowledge.document_fields.fields_clean takes; the names' own rules are beyond a schema
    "type": "object", "maxProperties": 32,
    "additionalProperties": {"oneOf": [*_FIELD_SCALAR, {"type": "array", "maxItems": 20, "items": {"oneOf": _FIELD_SCALAR}}]},
})
class _FieldsJSON(serializers.JSONField):
    pass


class DocumentUpdateInput(StrictInput):
    restricted_to_groups = ItemList(
        child=Text(max_length=150), max_length=MAX_GROUP_NAMES, required=False,
        help_text="Names of the groups whose members may read the document (KB editors always may); [] lifts the "
                  "restriction. An unknown name is 400 `unknown_group`.",
    )
    # DRF's metaclass takes declared fields out of the class, so this one named like ``Serializer.fields`` does
    # not replace that property (mypy cannot know).
    fields = _FieldsJSON(  # type: ignore[assignment]
        required=False,
        help_text="The document's own metadata, replacing what it had: an object of at most 32 names (1–64 "
                  "characters; not document_id, chunk_id, title, source_name, section, page, source_url, chunk_type), "
                  "each a text (≤ 500 characters), a number, true/false or a list of them; {} clears them. Stored as "
                  "`metadata.fields`; Dify's records show them and its metadata_condition names them; the search's "
                  "metadata filter matches them. Otherwise 400 `invalid_document_fields`.",
    )

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError(_("Give restricted_to_groups, fields or both."))
        return attrs


class UploadedDocumentOutput(serializers.Serializer):
    id = serializers.IntegerField(help_text="The row this version is ingested on (a new version's id redirects to its "
                                            "document once it is ready)")
    document = serializers.IntegerField(help_text="The document's id, the same for every version")
    source_name = serializers.CharField()
    status = serializers.CharField()
    version = serializers.IntegerField()
    unchanged = serializers.BooleanField()


class UploadOutput(serializers.Serializer):
    documents = UploadedDocumentOutput(many=True)


class ProgressOutput(serializers.Serializer):
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    ratio = serializers.FloatField()
    unit = serializers.ChoiceField(choices=["chunks", "pages"],
                                   help_text="what done/total count: pages read by OCR (scans, images), then chunks embedded")


class QueueOutput(serializers.Serializer):
    position = serializers.IntegerField(help_text="Place among the waiting documents of its queue (1: next to start); it never moves back")
    ahead = serializers.IntegerField(help_text="Documents before it, those being ingested now included (people's "
                                     "uploads that arrive later count for a background one)")
    eta_seconds = serializers.IntegerField(allow_null=True, help_text="Estimated seconds until it is ready, from its "
                                           "KB's recent pace (the site's for a new KB); null before any document was ingested")
    chunks_per_second = serializers.FloatField(allow_null=True, help_text="The embedding pace the estimate used")
    background = serializers.BooleanField(help_text="In the background queue (the demo KB, start-up, source and "
                                          "folder syncs): people's uploads go first, and `position` counts this queue")


class DocumentErrorOutput(serializers.Serializer):
    code = serializers.CharField(help_text="Stable: `corrupt_file`, `undecodable_text`, `empty_file`, `archive_bomb`, "
                                           "`type_mismatch`, `ingest_error`, `ingest_crashed`")
    message = serializers.CharField(help_text="What the code means, in the caller's language (Accept-Language)")
    detail = serializers.CharField(allow_blank=True, help_text="The technical message stored at ingestion (English)")


class DocumentOutput(serializers.ModelSerializer):
    progress = serializers.SerializerMethodField()
    queue = serializers.SerializerMethodField()
    error = serializers.SerializerMethodField()
    restricted_to_groups = serializers.SerializerMethodField()
    replaces: serializers.PrimaryKeyRelatedField[Document] = serializers.PrimaryKeyRelatedField(read_only=True, allow_null=True)
    document = serializers.SerializerMethodField(help_text="The document's id, the same for every version: this row's "
                                                           "own, or for a new version being ingested the one it replaces")
    source_url = serializers.CharField(read_only=True, help_text="Where the document's original lives (a source's page "
                                       "or file), \"\" for an upload")

    class Meta:
        model = Document
        fields = [
            "id", "document", "title", "source_name", "external_id", "source_url", "doc_type", "size", "sha256", "status",
            "progress", "queue", "error", "version", "replaces", "metadata", "restricted_to_groups",
            "chunk_size", "chunk_overlap", "created_at", "updated_at",
        ]
        read_only_fields = fields

    def get_document(self, document) -> int:
        return document.replaces_id or document.pk

    @extend_schema_field(ProgressOutput)
    def get_progress(self, document) -> dict:
        ocr = document.status == "processing" and (document.metadata or {}).get("ingest_stage") == "ocr"
        return {"done": document.chunks_done, "total": document.chunks_total, "ratio": round(document.progress, 4),
                "unit": "pages" if ocr else "chunks"}

    @extend_schema_field(QueueOutput(allow_null=True))
    def get_queue(self, document) -> dict | None:
        """A waiting document's place (``knowledge.ingestion.queue``): set for a page by the list, else read here."""
        if document.status != "pending":
            return None
        place = document.queue if hasattr(document, "queue") else queue_places([document]).get(document.pk)
        return None if place is None else place.payload()

    @extend_schema_field(DocumentErrorOutput(allow_null=True))
    def get_error(self, document) -> dict | None:
        if not document.error_code:
            return None
        return {"code": document.error_code, "message": document_failure_text(document.error_code, document.error_message),
                "detail": document.error_message}

    def get_restricted_to_groups(self, document) -> list[str]:
        # Reads the prefetched relation (no query per document).
        return sorted(g.name for g in document.restricted_to_groups.all())


# --- chunks -----------------------------------------------------------------

class ChunkFilterInput(serializers.Serializer):
    """Query parameters of the chunk list (unknown parameters, like ``page``, are ignored)."""

    document = serializers.IntegerField(required=False, min_value=1, max_value=2**63 - 1, help_text="Only chunks of this document id")
    type = serializers.ChoiceField(required=False, choices=ChunkType.choices)
    enabled = serializers.BooleanField(required=False)
    q = Text(required=False, max_length=500, trim_whitespace=False, help_text="Substring of the content (case-insensitive)")
    include = serializers.ChoiceField(required=False, choices=[("tokens", "tokens")], help_text="Add the keyword tokens")


class ChunkCreateInput(StrictInput):
    document = serializers.IntegerField(min_value=1, max_value=2**63 - 1, help_text="A ready document of this KB")
    content = Text(trim_whitespace=False, allow_blank=True, blank_refused_later=True, max_length=100000,
                   help_text="The text; blank is 400 `empty_chunk`")
    section_path = ItemList(child=Text(max_length=500), max_length=20, required=False,
                                         help_text="Headings the chunk sits under (embedded and indexed with it)")


class ChunkUpdateInput(StrictInput):
    content = Text(required=False, allow_blank=True, blank_refused_later=True, trim_whitespace=False, max_length=100000,
                   help_text="The new text (re-embedded); blank is 400 `empty_chunk` (disable the chunk instead)")
    enabled = serializers.BooleanField(required=False)


class ChunkOutput(serializers.ModelSerializer):
    document = serializers.IntegerField(source="document_id", read_only=True)
    document_title = serializers.CharField(source="document.title", read_only=True)
    source_name = serializers.CharField(source="document.source_name", read_only=True)

    class Meta:
        model = Chunk
        fields = [
            "id", "document", "document_title", "source_name", "ordinal", "chunk_type", "content",
            "section_path", "page_start", "page_end", "enabled", "metadata", "updated_at",
        ]
        read_only_fields = fields


class ChunkWithTokensOutput(ChunkOutput):
    """A chunk; ``tokens`` only with ``include=tokens`` (one schema serves both, so the field is optional)."""

    tokens = serializers.ListField(child=serializers.CharField(), required=False)

    class Meta(ChunkOutput.Meta):
        fields = ChunkOutput.Meta.fields + ["tokens"]
        read_only_fields = fields


class DocumentVersionOutput(serializers.Serializer):
    number = serializers.IntegerField()
    current = serializers.SerializerMethodField(help_text="The version the document serves now")
    uploaded_by = serializers.CharField(source="uploaded_by.username", allow_null=True, default=None)
    uploaded_at = serializers.DateTimeField()
    size = serializers.IntegerField()
    sha256 = serializers.CharField()
    chunk_count = serializers.IntegerField()
    has_file = serializers.SerializerMethodField(help_text="Its file is kept (ZHIKU_DOCUMENT_VERSIONS_KEPT): it can be restored")
    restored_from = serializers.IntegerField(allow_null=True)
    replaced_by = serializers.CharField(source="replaced_by.username", allow_null=True, default=None)
    replaced_at = serializers.DateTimeField(allow_null=True)

    def get_current(self, version) -> bool:
        return version.replaced_at is None

    def get_has_file(self, version) -> bool:
        return bool(version.file)
