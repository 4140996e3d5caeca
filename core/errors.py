"""Application errors and the one registry of error codes: each code once, with its HTTP status, class and message.

Each app declares its codes as an ``ErrorCode`` enum beside its registrations (its ``errors`` module:
``class KnowledgeError(ErrorCode)``); a raise site names a member and the numbers or names its message needs:
``raise fail(KnowledgeError.QUESTION_TOO_LONG, limit=MAX_QUERY_CHARS)``, so mypy refuses a code no app declares.
``fail`` builds the code's class's exception with the message in the active language (gettext-lazy templates;
locale/ holds the Chinese); a rule that reads differently in places keeps those sentences as named ``variants``.
docs/api.md's table is generated from ``CODES`` (``manage.py error_codes --markdown``); tests keep it current and
refuse unregistered codes.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _


class ApplicationError(Exception):
    """Base error; the API turns it into ``{"error": {"code", "message"}}`` with ``status_code``."""

    status_code = 400
    default_code = "invalid"

    def __init__(self, message: str, *, code: str | None = None, extra: dict[str, Any] | None = None) -> None:
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


class ErrorCode(StrEnum):
    """An error code: each app subclasses this member-less base with its own codes (``core.errors.CoreError``,
    ``knowledge.errors.KnowledgeError``…). A member's value is the code on the wire and in the database."""


@dataclass(frozen=True)
class Registered:
    """One registered code: the class it is raised as (which gives its status) and its message template.

    ``status`` is set only for codes answered outside the ApplicationError classes (DRF's own exceptions,
    the request-line limits, the chat socket's events).
    """

    code: ErrorCode
    error: type[ApplicationError] | None
    message: Promise
    variants: dict[str, Promise] = field(default_factory=dict)
    status: int | None = None

    @property
    def http_status(self) -> int | None:
        return self.status if self.error is None else self.error.status_code

    def text(self, variant: str | None = None, **params: Any) -> str:
        template = str(self.message if variant is None else self.variants[variant])
        return template % params if params else template


# Keyed by the code's text (a member is equal to its value), so a code read back from a row or a message finds its entry.
CODES: dict[str, Registered] = {}


def register(code: ErrorCode, error: type[ApplicationError] | None, message: Promise, *, status: int | None = None,
             **variants: Promise) -> None:
    """Register one of an app's codes (in its ``errors`` module, beside its enum): the same one registry."""
    assert code not in CODES, f"error code {code!r} registered twice"
    CODES[code] = Registered(code, error, message, variants, status)


def fail(code: ErrorCode, variant: str | None = None, *, extra: dict[str, Any] | None = None, on_field: str | None = None,
         **params: Any) -> ApplicationError:
    """The exception for registered ``code`` (``variant``: one of its other sentences), its message filled from
    ``params``; ``on_field`` also reports the message under ``fields`` for that form field. A code registered
    without a class (answered outside the ApplicationError classes) cannot be raised: TypeError."""
    entry = CODES[code]
    if entry.error is None:
        raise TypeError(f"error code {code!r} has no ApplicationError class (status {entry.status}): fail() cannot raise it")
    message = entry.text(variant, **params)
    if on_field is not None:
        extra = {**(extra or {}), "fields": {on_field: [message]}}
    return entry.error(message, code=str(code), extra=extra)


def message(code: ErrorCode, variant: str | None = None, **params: Any) -> str:
    """The registered message for ``code`` in the active language (for answers built outside the exceptions)."""
    return CODES[code].text(variant, **params)


def stored(code: ErrorCode, **params: Any) -> str:
    """A registered code and its numbers as JSON text, for a row that keeps why something failed: it is translated
    when it is shown (``stored_text``), so a reader sees it in their language whatever language the run had."""
    assert code in CODES, code
    return json.dumps({"code": str(code), "params": params}, sort_keys=True)


# What a failure stored as a code and a detail reads (a document's ``error_code``, answered by the chunking preview
# too): kept apart from CODES, because a code may read one way answering a request and another on a failed row
# (``unsupported_type`` names the file answering an upload; a failed document says only that its type is not
# supported). docs/api.md lists them below the table of CODES.
FAILURES: dict[str, Registered] = {}


def register_failure(code: ErrorCode, message: Promise, **variants: Promise) -> None:
    """Register what a stored failure of ``code`` reads (``variants``: its other sentences, by what the detail names)."""
    assert code not in FAILURES, f"failure code {code!r} registered twice"
    FAILURES[code] = Registered(code, None, message, variants, None)


def failure_text(code: str, detail: str = "", variant: str | None = None, **params: Any) -> str:
    """The sentence, in the active language, for a failure stored as ``code`` and the run's own English ``detail``
    (a document's, a source run's or item's): its failure sentence (``register_failure``), else the code's registered
    message with ``detail`` as ``%(detail)s``. An unknown code, or a template that names other values, gives the detail."""
    entry = FAILURES.get(code) or CODES.get(code)
    if entry is None:
        return detail or code
    try:
        return entry.text(variant, **{"detail": detail, **params})
    except (KeyError, TypeError, ValueError):  # a template that names values the row does not keep
        return detail


def stored_text(raw: str) -> tuple[str, str]:
    """(code, message in the active language) of a ``stored`` error; text stored otherwise is ("", the text)."""
    try:
        value = json.loads(raw) if raw.startswith("{") else None
    except ValueError:
        value = None
    if not isinstance(value, dict) or value.get("code") not in CODES or not isinstance(value.get("params"), dict):
        return "", raw
    return value["code"], CODES[value["code"]].text(**value["params"])


class CoreError(ErrorCode):
    """The codes every app shares: each class's default, DRF's answers, request bodies, forms and queries."""

    INVALID = "invalid"
    NOT_FOUND = "not_found"
    PERMISSION_DENIED = "permission_denied"
    CONFLICT = "conflict"
    BAD_REQUEST = "bad_request"
    PARSE_ERROR = "parse_error"
    NOT_AUTHENTICATED = "not_authenticated"
    AUTHENTICATION_FAILED = "authentication_failed"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    NOT_ACCEPTABLE = "not_acceptable"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    THROTTLED = "throttled"
    TOO_MANY_ATTEMPTS = "too_many_attempts"
    URI_TOO_LONG = "uri_too_long"
    HEADERS_TOO_LARGE = "headers_too_large"
    BODY_TOO_LARGE = "body_too_large"
    INVALID_JSON = "invalid_json"
    JSON_TOO_DEEP = "json_too_deep"
    INVALID_CHARACTERS = "invalid_characters"
    TOO_MANY_FIELDS = "too_many_fields"
    UNKNOWN_FIELD = "unknown_field"
    UNKNOWN_PARAMETER = "unknown_parameter"
    REPEATED_PARAMETER = "repeated_parameter"
    INVALID_PAGE_SIZE = "invalid_page_size"
    INVALID_ID = "invalid_id"
    INVALID_FILTER = "invalid_filter"
    NOTHING_TO_UPDATE = "nothing_to_update"


_code = register
V, N, P, C = ValidationFailed, NotFound, PermissionDenied, Conflict

# --- the generic codes: each class's default, and DRF's answers mapped by core.api.errors ------------------
_code(CoreError.INVALID, V, _("Invalid input."),
      form_text=_("%(field)s must be text of at most %(limit)s characters."),
      group_names=_("At most %(limit)s group names."),
      ask_body=_('The body must be an "ask" message: {"conversation", "kb_ids", "question"}.'))
_code(CoreError.NOT_FOUND, N, _("Not found."))
_code(CoreError.PERMISSION_DENIED, P, _("You do not have permission to perform this action."),
      csrf=_("CSRF failed: %(reason)s"),
      token_create=_("Create tokens signed in to the console, or with a username and password "
                     "(POST /api/auth/token/), not with another token."))
_code(CoreError.CONFLICT, C, _("The request conflicts with the current state."))
_code(CoreError.BAD_REQUEST, V, _("The request could not be read."))
_code(CoreError.PARSE_ERROR, None, _("Malformed request."), status=400)
_code(CoreError.NOT_AUTHENTICATED, None, _("Authentication credentials were not provided."), status=401,
      sse=_("Sign in, or send Authorization: Token <API token>."),
      sse_token=_("Use Authorization: Token <API token>."),
      socket=_("Sign in, or connect with ?token=<API token>."))
_code(CoreError.AUTHENTICATION_FAILED, None, _("Invalid token."), status=401)
_code(CoreError.METHOD_NOT_ALLOWED, None, _("Use POST."), status=405)
_code(CoreError.NOT_ACCEPTABLE, None, _("Could not satisfy the request Accept header."), status=406)
_code(CoreError.UNSUPPORTED_MEDIA_TYPE, None, _("Unsupported media type in the request."), status=415)
_code(CoreError.THROTTLED, None, _("Request was throttled."), status=429)
_code(CoreError.TOO_MANY_ATTEMPTS, None, _("Too many failed login attempts; try again later."), status=429)
_code(CoreError.URI_TOO_LONG, None, _("The URL is longer than %(limit)s bytes."), status=414)
_code(CoreError.HEADERS_TOO_LARGE, None, _("Send at most %(count)s headers and %(size)s bytes of them."), status=431)

# --- request bodies and forms ----------------------------------------------------------------------------------
_code(CoreError.BODY_TOO_LARGE, BodyTooLarge, _("The JSON body is %(size)s bytes, over the limit of %(limit)s."),
      form=_("The form's fields are larger than the server accepts."),
      stream=_("The body is over %(limit)s bytes."),
      unverified=_("The body is over %(limit)s bytes, the most a request without a valid sign-in may send here; "
                   "signed in (an API token or a session), up to %(upload_limit)s bytes."))
_code(CoreError.INVALID_JSON, V, _("The body is not valid JSON: %(error)s"), utf8=_("The body is not valid UTF-8 JSON."))
_code(CoreError.JSON_TOO_DEEP, V, _("The JSON nests arrays and objects deeper than %(limit)s levels."))
_code(CoreError.INVALID_CHARACTERS, V, _("The input contains a NUL character; remove it and retry."),
      surrogate=_("The input contains an unpaired surrogate; remove it and retry."),
      nul_in=_("The input contains a NUL character in %(field)s; remove it and retry."),
      surrogate_in=_("The input contains an unpaired surrogate in %(field)s; remove it and retry."))
_code(CoreError.TOO_MANY_FIELDS, V, _("The form holds more fields than the server accepts."))
_code(CoreError.UNKNOWN_FIELD, V, _("Unknown fields: %(fields)s."), fixed=_("These fields cannot be changed here: %(fields)s."))
_code(CoreError.UNKNOWN_PARAMETER, V, _("Unknown query parameters: %(names)s."))
_code(CoreError.REPEATED_PARAMETER, V, _("These query parameters take one value and were given more than once: %(names)s."))
_code(CoreError.INVALID_PAGE_SIZE, V, _("page_size must be a whole number from 1 to %(limit)s."))
_code(CoreError.INVALID_ID, V, _("%(value)r is not a valid id."))
_code(CoreError.INVALID_FILTER, V, _("status must be one of %(values)s."), chunks=_("Invalid filter: %(errors)s"))
_code(CoreError.NOTHING_TO_UPDATE, V, _("Nothing to change."), chunk=_("Send content or enabled."))
