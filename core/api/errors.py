"""The single DRF exception handler: every error becomes ``{"error": {"code", "message", ...}}``."""
from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent, TooManyFilesSent
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from core.errors import CODES, ApplicationError, CoreError, message
from core.http.csrf import csrf_reason

# How DRF's SessionAuthentication words a failed CSRF check: "CSRF Failed: <Django's reason>".
DRF_CSRF_PREFIX = "CSRF Failed: "


def _first_message(detail: object) -> str:
    """A readable one-line message from a DRF detail (string, list or dict of lists)."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            inner = _first_message(value)
            return inner if key in ("non_field_errors", "detail") else f"{key}: {inner}"
        return message(CoreError.INVALID)
    if isinstance(detail, (list, tuple)):
        return _first_message(detail[0]) if detail else message(CoreError.INVALID)
    return str(detail)


def _code_of(exc: exceptions.APIException) -> str:
    """The exception's code when it is registered (core.errors.CODES: DRF's own are), else its class's default."""
    codes = exc.get_codes()
    return codes if isinstance(codes, str) and codes in CODES else exc.default_code


def _suspicious(exc: SuspiciousOperation) -> Response:
    """Django's refusals while it reads a form (too many fields or files, a field over DATA_UPLOAD_MAX_MEMORY_SIZE)
    in the API's shape, where Django itself would answer a bare 400 page; logged as Django logs them."""
    logging.getLogger(f"django.security.{exc.__class__.__name__}").warning("%s", exc)
    if isinstance(exc, RequestDataTooBig):
        code, variant = "body_too_large", "form"
    elif isinstance(exc, TooManyFilesSent):
        code, variant = "too_many_files", "form"
    elif isinstance(exc, TooManyFieldsSent):
        code, variant = "too_many_fields", None
    else:
        code, variant = "bad_request", None
    set_rollback()
    entry = CODES[code]
    return Response({"error": {"code": code, "message": entry.text(variant)}}, status=entry.http_status)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Map ApplicationError and DRF's own exceptions to one error shape; anything else stays DRF's (a 500)."""
    body: dict[str, Any]
    if isinstance(exc, ApplicationError):
        body = {"code": exc.code, "message": str(exc.message), **exc.extra}
        set_rollback()
        return Response({"error": body}, status=exc.status_code)
    if isinstance(exc, SuspiciousOperation):
        return _suspicious(exc)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()

    # DRF's handler adds WWW-Authenticate (401) and Retry-After (429) headers and
    # rolls back the atomic block; only its body is reshaped here.
    response = drf_exception_handler(exc, context)
    if response is None or not isinstance(exc, exceptions.APIException):
        return response
    if isinstance(exc, exceptions.ValidationError):
        body = {"code": "invalid", "message": _first_message(exc.detail), "fields": exc.detail}
        if not isinstance(exc.detail, dict):
            body["fields"] = {"non_field_errors": exc.detail}
    elif isinstance(exc, exceptions.PermissionDenied) and str(exc.detail).startswith(DRF_CSRF_PREFIX):
        # SessionAuthentication's refusal, in English: the registered sentence with Django's reason in words.
        reason = csrf_reason(str(exc.detail)[len(DRF_CSRF_PREFIX):])
        body = {"code": "permission_denied", "message": message(CoreError.PERMISSION_DENIED, "csrf", reason=reason)}
    else:
        body = {"code": _code_of(exc), "message": _first_message(exc.detail)}
        # Throttled sets ``wait`` (seconds, or None) in its __init__; the stubs do not declare it.
        wait = getattr(exc, "wait", None) if isinstance(exc, exceptions.Throttled) else None
        if wait is not None:
            body["retry_after"] = wait
    response.data = {"error": body}
    return response
