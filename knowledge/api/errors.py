"""The single DRF exception handler: every error becomes ``{"error": {"code", "message", ...}}``."""
from __future__ import annotations

from django.utils.translation import gettext
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
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


def exception_handler(exc, context):
    """Map ApplicationError and DRF's own exceptions to one error shape; anything else stays DRF's (a 500)."""
    if isinstance(exc, ApplicationError):
        body = {"code": exc.code, "message": str(exc.message), **exc.extra}
        set_rollback()
        return Response({"error": body}, status=exc.status_code)
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
