"""Application errors and the one registry of error codes: each code once, with its HTTP status, class and message.

A raise site names a registered code and the numbers or names its message needs:
``raise fail("question_too_long", limit=MAX_QUERY_CHARS)``. ``fail`` builds the code's class's exception with
the message in the active language (gettext-lazy templates; locale/ holds the Chinese); a rule that reads
differently in places keeps those sentences as named ``variants``. docs/api.md's table is generated from
``CODES`` (``manage.py error_codes --markdown``); tests keep it current and refuse unregistered codes.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
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

    def text(self, variant: str | None = None, **params: Any) -> str:
        template = str(self.message if variant is None else self.variants[variant])
        return template % params if params else template


CODES: dict[str, ErrorCode] = {}


def _code(code: str, error: type[ApplicationError] | None, message: Promise, *, status: int | None = None, **variants: Promise) -> None:
    assert code not in CODES, f"error code {code!r} registered twice"
    CODES[code] = ErrorCode(code, error, message, variants, status)


def register(code: str, error: type[ApplicationError] | None, message: Promise, *, status: int | None = None,
             **variants: Promise) -> None:
    """Register an app's own code (its ``errors`` module, imported by its AppConfig.ready): the same one registry."""
    _code(code, error, message, status=status, **variants)


def fail(code: str, variant: str | None = None, *, extra: dict[str, Any] | None = None, on_field: str | None = None,
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
    return entry.error(message, code=code, extra=extra)


def message(code: str, variant: str | None = None, **params: Any) -> str:
    """The registered message for ``code`` in the active language (for answers built outside the exceptions)."""
    return CODES[code].text(variant, **params)


def stored(code: str, **params: Any) -> str:
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

# --- the generic codes: each class's default, and DRF's answers mapped by core.api.errors ------------------
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
      stream=_("The body is over %(limit)s bytes."),
      unverified=_("The body is over %(limit)s bytes, the most a request without a valid sign-in may send here; "
                   "signed in (an API token or a session), up to %(upload_limit)s bytes."))
_code("invalid_json", V, _("The body is not valid JSON: %(error)s"), utf8=_("The body is not valid UTF-8 JSON."))
_code("json_too_deep", V, _("The JSON nests arrays and objects deeper than %(limit)s levels."))
_code("invalid_characters", V, _("The input contains a NUL character; remove it and retry."),
      surrogate=_("The input contains an unpaired surrogate; remove it and retry."),
      nul_in=_("The input contains a NUL character in %(field)s; remove it and retry."),
      surrogate_in=_("The input contains an unpaired surrogate in %(field)s; remove it and retry."))
_code("too_many_fields", V, _("The form holds more fields than the server accepts."))
_code("unknown_field", V, _("Unknown fields: %(fields)s."), fixed=_("These fields cannot be changed here: %(fields)s."))
_code("unknown_parameter", V, _("Unknown query parameters: %(names)s."))
_code("repeated_parameter", V, _("These query parameters take one value and were given more than once: %(names)s."))
_code("invalid_page_size", V, _("page_size must be a whole number from 1 to %(limit)s."))
_code("invalid_id", V, _("%(value)r is not a valid id."))
_code("invalid_filter", V, _("status must be one of %(values)s."), chunks=_("Invalid filter: %(errors)s"))
_code("nothing_to_update", V, _("Nothing to change."), chunk=_("Send content or enabled."))
