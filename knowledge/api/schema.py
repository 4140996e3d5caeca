"""The OpenAPI schema's shared parts: the one error shape every API error has, and which error statuses an operation answers.

Every error goes through ``knowledge.api.errors.exception_handler`` (or, for the SSE view and
unknown ``/api/`` paths, writes the same shape), so one component documents them all. Most
error statuses follow from how a view is built (authentication, a request body, path ids,
pagination, a throttle); ``AutoSchema`` adds those, and views declare only the rest with
``errors(...)``.
"""
from __future__ import annotations

import uritemplate
from drf_spectacular.contrib.knox_auth_token import KnoxTokenScheme
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.permissions import SAFE_METHODS, AllowAny

from knowledge.api.parsers import SafeJSONParser

ERROR_DESCRIPTIONS = {
    400: "Invalid input: `invalid` (with `fields`), `parse_error` (malformed JSON), `json_too_deep`, "
         "`invalid_characters`, `unknown_field` or the operation's own code.",
    401: "`not_authenticated` (no credentials) or `authentication_failed` (an unknown, expired or revoked token, "
         "or an inactive user).",
    403: "`permission_denied` (a session request without its CSRF token) or `role_required` (the caller's "
         "role on the knowledge base is too low).",
    404: "`not_found` or a specific code (`kb_not_found`, `document_not_found`, ...): missing, or not "
         "readable by the caller; also a page number past the end of a list.",
    409: "`conflict` or a specific code: the resource is not in a state that allows this.",
    413: "`body_too_large` (a JSON body over ZHIKU_MAX_JSON_BYTES) or `file_too_large` (an upload).",
    415: "`unsupported_media_type` (a Content-Type the operation does not read) or `unsupported_type` (an "
         "uploaded file type ingestion cannot parse).",
    429: "`throttled` or `too_many_attempts`, with `retry_after` seconds (also the Retry-After header).",
}


class ApiTokenScheme(KnoxTokenScheme):
    """``Authorization: Token <key>`` (accounts/auth.py, django-rest-knox's authentication), named as before."""

    target_class = "accounts.auth.TokenAuthentication"
    name = "tokenAuth"


class ErrorBody(serializers.Serializer):
    code = serializers.CharField(help_text="A stable machine-readable code, e.g. `kb_not_found`.")
    message = serializers.CharField(help_text="A readable one-line explanation.")
    fields = serializers.DictField(
        required=False, help_text="Validation errors by field name (code `invalid`); other codes may add their own keys.",
    )
    retry_after = serializers.IntegerField(required=False, help_text="Seconds to wait (429).")


class ErrorResponse(serializers.Serializer):
    """``{"error": {"code", "message", ...}}``: the body of every 4xx answer of the API."""

    error = ErrorBody()


def errors(*statuses: int) -> dict[int, OpenApiResponse]:
    """``extend_schema`` responses for error statuses a view answers beyond those ``AutoSchema`` infers."""
    return {status: OpenApiResponse(ErrorResponse, description=ERROR_DESCRIPTIONS[status]) for status in statuses}


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's AutoSchema, adding the error responses that follow from how the view is built."""

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        for status, response in errors(*sorted(self._inferred_error_statuses())).items():
            responses.setdefault(str(status), self._get_response_for_code(response, str(status), direction=direction))
        return dict(sorted(responses.items()))

    def _inferred_error_statuses(self) -> set[int]:
        statuses: set[int] = set()
        if self.view.authentication_classes:
            statuses.add(401)  # a wrong token is refused even where anyone may call
        if self._needs_login() and self.method not in SAFE_METHODS:
            statuses.add(403)  # session callers need the CSRF token
        if self.method in ("POST", "PUT", "PATCH") and self.get_request_serializer() is not None:
            statuses |= {400, 415}
            if any(issubclass(p, SafeJSONParser) for p in self.view.parser_classes):
                statuses.add(413)
        if self.get_override_parameters():
            statuses.add(400)  # a query parameter out of its range or choices
        if uritemplate.variables(self.path) or (self.method == "GET" and self._is_list_view() and self._get_paginator()):
            statuses.add(404)
        if self.view.throttle_classes:
            statuses.add(429)
        return statuses

    def _needs_login(self) -> bool:
        return not all(isinstance(p, AllowAny) for p in self.view.get_permissions())
