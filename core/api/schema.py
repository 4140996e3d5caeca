"""The OpenAPI schema's shared parts: the one error shape every API error has, and which error statuses an operation answers.

Every error has the shape of ``core.api.errors.exception_handler``, so one component documents them all.
``AutoSchema`` adds the error statuses that follow from how a view is built (authentication, a body, path
ids, pagination, a throttle; views declare the rest with ``errors(...)``) and the input limits
drf-spectacular leaves out, so a request the schema calls valid is one the server accepts
(tests/test_openapi_fuzz.py): ``minLength``/``pattern`` for non-blank text, ``additionalProperties: false``
for strict inputs, ``minProperties`` 1 for a PATCH, ``maxItems`` for lists.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import uritemplate
from drf_spectacular.contrib.knox_auth_token import KnoxTokenScheme
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.plumbing import force_instance
from drf_spectacular.utils import Direction, OpenApiResponse
from rest_framework import serializers
from rest_framework.permissions import SAFE_METHODS, AllowAny

from core.api.fields import Rule, StrictInput
from core.api.parsers import SafeJSONParser

# drf-spectacular's force_instance is unannotated: a serializer (or field) class gives an instance, an instance itself.
_instance = cast("Callable[[Any], Any]", force_instance)

# Not blank after DRF's trimming: a character outside what str.strip() removes. Spelled out, since
# regex dialects disagree on \s (JavaScript's leaves out U+001C-U+001F and U+0085, which Python strips).
NON_SPACE = r"[^\u0009-\u000d\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"

ERROR_DESCRIPTIONS = {
    400: "Invalid input: `invalid` (with `fields`), `parse_error` (malformed JSON or form), `json_too_deep`, "
         "`invalid_characters`, `unknown_field`, `unknown_parameter` / `repeated_parameter` (a query parameter the "
         "operation does not declare, or one it takes once given twice), `invalid_page_size` (a list's `page_size` "
         "not from 1 to 100), "
         "`too_many_fields` / `too_many_files` (a form) or the operation's own code.",
    401: "`not_authenticated` (no credentials) or `authentication_failed` (an unknown, expired or revoked token, "
         "or an inactive user).",
    403: "`permission_denied` (a session request without its CSRF token) or `role_required` (the caller's "
         "role on the knowledge base is too low).",
    404: "`not_found` or a specific code (`kb_not_found`, `document_not_found`, ...): missing, or not "
         "readable by the caller; also a page number past the end of a list.",
    409: "`conflict` or a specific code: the resource is not in a state that allows this.",
    410: "A link that can no longer be used: `invitation_used`, `invitation_expired` or `invitation_revoked`.",
    413: "`body_too_large` (a JSON body over ZHIKU_MAX_JSON_BYTES, or a form's fields over DATA_UPLOAD_MAX_MEMORY_SIZE) "
         "or `file_too_large` (an upload).",
    415: "`unsupported_media_type` (a Content-Type the operation does not read) or `unsupported_type` (an "
         "uploaded file type ingestion cannot parse).",
    502: "`email_failed`: the mail server refused the message or could not be reached (nothing was kept).",
    429: "`throttled` or `too_many_attempts`, with `retry_after` seconds (also the Retry-After header).",
}


def state_rules(schema: dict[str, Any], rules: tuple[Rule, ...]) -> None:
    """An input's rules across fields in its schema: as JSON Schema where one says them (``allOf``), each with its
    code and sentence in ``x-rules`` and the description, so a request the schema calls valid keeps them."""
    if not rules:
        return
    stated = [rule.schema for rule in rules if rule.schema is not None]
    if stated:
        schema["allOf"] = stated
    schema["x-rules"] = [{"code": rule.code, "rule": rule.text} for rule in rules]
    lines = "\n".join(f"- {rule.text} (400 `{rule.code}`)" for rule in rules)
    schema["description"] = (schema.get("description", "") + "\n\nRules across fields:\n" + lines).strip()


class ApiTokenScheme(KnoxTokenScheme):  # type: ignore[no-untyped-call]  # the extensions' registering __init_subclass__ is unannotated
    """``Authorization: Token <key>`` (accounts/auth.py, django-rest-knox's authentication), named as before."""

    target_class = "accounts.auth.TokenAuthentication"
    name = "tokenAuth"


class ErrorBody(serializers.Serializer[Any]):
    code = serializers.CharField(help_text="A stable machine-readable code, e.g. `kb_not_found`.")
    message = serializers.CharField(help_text="A readable one-line explanation.")
    # The body's key "fields"; DRF's metaclass moves declared fields off the class, so Serializer.fields stays.
    fields = serializers.DictField(  # type: ignore[assignment]  # the stubs see the name clash only
        required=False, help_text="Validation errors by field name (code `invalid`); other codes may add their own keys.",
    )
    retry_after = serializers.IntegerField(required=False, help_text="Seconds to wait (429).")


class ErrorResponse(serializers.Serializer[Any]):
    """``{"error": {"code", "message", ...}}``: the body of every 4xx answer of the API."""

    error = ErrorBody()


def errors(*statuses: int) -> dict[int, OpenApiResponse]:
    """``extend_schema`` responses for error statuses a view answers beyond those ``AutoSchema`` infers."""
    return {status: OpenApiResponse(ErrorResponse, description=ERROR_DESCRIPTIONS[status]) for status in statuses}


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's AutoSchema, adding the error responses that follow from how the view is built."""

    def _get_response_bodies(self, direction: Direction = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        for status, response in errors(*sorted(self._inferred_error_statuses())).items():
            responses.setdefault(str(status), self._get_response_for_code(response, str(status), direction=direction))  # type: ignore[no-untyped-call]  # drf-spectacular leaves this hook unannotated
        return dict(sorted(responses.items()))

    def _get_serializer_field_meta(self, field: serializers.Field[Any, Any, Any, Any], direction: Direction) -> dict[str, Any]:
        meta: dict[str, Any] = super()._get_serializer_field_meta(field, direction)  # type: ignore[no-untyped-call]  # drf-spectacular leaves this hook unannotated
        if direction == "request" and isinstance(field, serializers.CharField) and not field.read_only:
            refused_later = getattr(field, "blank_refused_later", False)
            if not field.allow_blank or refused_later:
                meta["minLength"] = max(1, meta.get("minLength", 0))
                if field.trim_whitespace or refused_later:
                    meta.setdefault("pattern", NON_SPACE)
        return meta

    def _insert_field_validators(self, field: serializers.Field[Any, Any, Any, Any], schema: dict[str, Any]) -> None:
        super()._insert_field_validators(field, schema)  # type: ignore[no-untyped-call]  # drf-spectacular leaves this hook unannotated
        if getattr(field, "blank_refused_later", False) and "oneOf" in schema:
            # drf-spectacular offers "" beside a constrained string that allows blank; a service refuses it.
            schema.update(schema.pop("oneOf")[0])

    def _map_serializer(self, serializer: Any, direction: Direction, bypass_extensions: bool = False) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_serializer(serializer, direction, bypass_extensions)  # type: ignore[no-untyped-call]  # drf-spectacular leaves this hook unannotated
        serializer = _instance(serializer)
        if direction == "request" and isinstance(serializer, StrictInput) and schema.get("type") == "object":
            schema["additionalProperties"] = False
            if serializer.partial:
                schema["minProperties"] = 1  # every PATCH of the API refuses an empty body
            state_rules(schema, serializer.rules)
        return schema

    def _get_request_for_media_type(self, serializer: Any, direction: Direction = "request") -> tuple[Any, bool]:
        schema, required = super()._get_request_for_media_type(serializer, direction)  # type: ignore[no-untyped-call]  # drf-spectacular leaves this hook unannotated
        strict = _instance(serializer)
        if self.method == "PATCH" and isinstance(strict, StrictInput):
            required = True  # an empty PATCH (no body, or {}) changes nothing and is refused
        if isinstance(strict, StrictInput) and any(rule.body_required for rule in strict.rules):
            required = True  # a rule asks for one of the fields
        return schema, required

    def _unwrap_list_serializer(self, serializer: Any, direction: Direction) -> dict[str, Any] | None:
        schema = super()._unwrap_list_serializer(serializer, direction)
        if schema and isinstance(serializer, serializers.ListSerializer) and direction == "request":
            # ListSerializer sets max_length and min_length in its __init__; the stubs do not declare them.
            max_length, min_length = getattr(serializer, "max_length", None), getattr(serializer, "min_length", None)
            if max_length is not None:
                schema["maxItems"] = max_length
            if min_length is not None:
                schema["minItems"] = min_length
        return schema

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
        paged = self.method == "GET" and self._is_list_view() and self._get_paginator()  # type: ignore[no-untyped-call]  # drf-spectacular leaves this hook unannotated
        # Every operation: a query parameter it does not declare, or one given twice (core/api/query.py); and one
        # out of its range or choices (page_size among them).
        statuses.add(400)
        if uritemplate.variables(self.path) or paged:
            statuses.add(404)
        if self.view.throttle_classes:
            statuses.add(429)
        return statuses

    def _needs_login(self) -> bool:
        return not all(isinstance(p, AllowAny) for p in self.view.get_permissions())
