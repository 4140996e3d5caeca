"""The single DRF exception handler: every error becomes ``{"error": {"code", "message", ...}}``."""
from __future__ import annotations

import logging

from django.utils.translation import gettext
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent, TooManyFilesSent
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from knowledge.errors import ApplicationError


def _first_message(detail) -> str:
    """A readable one-line message from a DRF detail (string, list or dict of lists)."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            inner = _first_message(value)
            return inner if key in ("non_field_errors", "detail") else f"{key}: {inner}"
        return gettext("Invalid input.")
    if isinstance(detail, (list, tuple)):
        return _first_message(detail[0]) if detail else gettext("Invalid input.")
    return str(detail)


def _code_of(exc: exceptions.APIException) -> str:
    codes = exc.get_codes()
    if isinstance(codes, str):
        return codes
    return exc.default_code


def _suspicious(exc: SuspiciousOperation) -> Response:
    """Django's refusals while it reads a form (too many fields or files, a field over DATA_UPLOAD_MAX_MEMORY_SIZE)
    in the API's shape, where Django itself would answer a bare 400 page; logged as Django logs them."""
    logging.getLogger(f"django.security.{exc.__class__.__name__}").warning("%s", exc)
    if isinstance(exc, RequestDataTooBig):
        status, code, message = 413, "body_too_large", gettext("The form's fields are larger than the server accepts.")
    elif isinstance(exc, TooManyFilesSent):
        status, code, message = 400, "too_many_files", gettext("The form holds more files than the server accepts.")
    elif isinstance(exc, TooManyFieldsSent):
        status, code, message = 400, "too_many_fields", gettext("The form holds more fields than the server accepts.")
    else:
        status, code, message = 400, "bad_request", gettext("The request could not be read.")
    set_rollback()
    return Response({"error": {"code": code, "message": message}}, status=status)


def exception_handler(exc, context):
    """Map ApplicationError and DRF's own exceptions to one error shape; anything else stays DRF's (a 500)."""
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
    else:
        body = {"code": _code_of(exc), "message": _first_message(exc.detail)}
        if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
            body["retry_after"] = exc.wait
    response.data = {"error": body}
    return response
