"""The API's own field and input types: strict inputs (unknown fields refused), text that is text, lists
bounded before their items are read, file parts. Every app's serializers build on them."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from itertools import combinations
from typing import Any, ClassVar, cast

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.translation import gettext
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import get_error_detail

from core.errors import ApplicationError, CoreError, fail

# Group names in a document's restriction (upload form or PATCH): far more than any real restriction names.
MAX_GROUP_NAMES = 100


def finite(value: float) -> None:
    if not math.isfinite(value):
        raise serializers.ValidationError("Must be a finite number.", code="invalid")


def unknown_fields(names: list[str]) -> ApplicationError:
    """400 ``unknown_field``, with ``fields`` keyed by field name like every other error's ``fields``."""
    return fail(CoreError.UNKNOWN_FIELD, fields=", ".join(names), extra={"fields": {name: [gettext("Unknown field.")] for name in names}})


@dataclass(frozen=True)
class Rule:
    """A rule across an input's fields, stated by the schema (``core.api.schema.AutoSchema``): the code a request
    breaking it gets, its sentence, and the JSON Schema that says it where one can (None: the sentence alone, for a
    rule no schema keyword states, such as one value below another). ``body_required``: the rule asks for a field,
    so the request needs a body even where every field is optional. The input's view or service checks it."""

    code: str
    text: str
    schema: dict[str, Any] | None = None
    body_required: bool = False


def exactly_one(*names: str) -> dict[str, Any]:
    """JSON Schema: exactly one of ``names`` is present."""
    return {"oneOf": [{"required": [name]} for name in names]}


def at_most_one(*names: str) -> dict[str, Any]:
    """JSON Schema: no two of ``names`` are present together."""
    return {"not": {"anyOf": [{"required": [a, b]} for a, b in combinations(names, 2)]}}


def only_with(name: str, value: str, *, then: str, then_value: str) -> dict[str, Any]:
    """JSON Schema: ``name`` may be ``value`` only when ``then`` is ``then_value``. Said with anchored patterns, not
    ``enum``: drf-spectacular's enum hook would turn an enum inside a rule into a component of its own."""
    def exactly(text: str) -> dict[str, str]:
        return {"pattern": f"^{re.escape(text)}$"}

    return {"anyOf": [{"not": {"required": [name], "properties": {name: exactly(value)}}},
                      {"required": [then], "properties": {then: exactly(then_value)}}]}


class QueryValues(dict[str, str]):
    """A query string's parameters, one text value each: read by a serializer as plain values (DRF reads a QueryDict
    as an HTML form, where an empty value means "left out"), and as text, not JSON (``json_type_errors``)."""


def json_type_errors(fields: Any, data: dict[str, Any]) -> dict[str, list[str]]:
    """The fields of a JSON object whose value is not of the type the schema gives them: a boolean field takes
    ``true``/``false`` (DRF's own also takes 0, 1 and "yes"), a number field a JSON number, not ``false`` nor "3"."""
    errors: dict[str, list[str]] = {}
    for name, field in fields.items():
        if field.read_only or name not in data or data[name] is None:
            continue
        value = data[name]
        if isinstance(field, serializers.BooleanField):
            ok = isinstance(value, bool)
        elif isinstance(field, serializers.IntegerField):
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif isinstance(field, serializers.FloatField):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        else:
            continue
        if not ok:
            errors[name] = [str(field.error_messages["invalid"])]
    return errors


class StrictInput(serializers.Serializer[Any]):
    """An input serializer that rejects fields it does not know (400 ``unknown_field``) and, in a JSON body, values
    not of their field's JSON type (400 ``invalid``). ``rules``: its rules across fields, for the schema."""

    rules: ClassVar[tuple[Rule, ...]] = ()

    # The schema says so (additionalProperties: false, core.api.schema.AutoSchema). Nested,
    # the unknown names are given under the field's own: "filters.colour".
    def to_internal_value(self, data: Any) -> Any:
        if hasattr(data, "keys"):
            unknown = sorted(set(data.keys()) - set(self.fields))
            if unknown:
                prefix = f"{self.field_name}." if self.parent is not None and self.field_name else ""
                raise unknown_fields([prefix + str(name) for name in unknown])
        # A JSON object is a dict (a form or a query string is a QueryDict of text, which the fields convert).
        if type(data) is dict and (wrong := json_type_errors(self.fields, data)):
            raise serializers.ValidationError(wrong)
        return super().to_internal_value(data)


class Text(serializers.CharField):
    """A CharField that takes only strings: DRF's own turns a number into text (``{"text": 0}`` would be stored as "0").

    Blank is refused unless ``allow_blank``; the schema states it (``minLength`` 1, and a non-space
    ``pattern`` where surrounding whitespace is trimmed, since only whitespace is blank then).
    ``blank_refused_later``: blank passes the field and a service refuses it with its own code
    (``empty_chunk``); the schema states that limit too.
    """

    def __init__(self, *, blank_refused_later: bool = False, **kwargs: Any) -> None:
        self.blank_refused_later = blank_refused_later
        super().__init__(**kwargs)

    def to_internal_value(self, data: object) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class ItemList(serializers.ListField):
    """A ListField whose cost is bounded by its budget: the length is checked before any item (DRF's checks it
    after validating them all), and the first bad item ends the validation, named by its index (DRF's
    builds an error for every bad item: 1 MB of blank strings cost seconds)."""

    def to_internal_value(self, data: Any) -> list[Any]:
        if isinstance(data, list) and self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return super().to_internal_value(data)

    def run_child_validation(self, data: list[Any]) -> list[Any]:
        result = []
        for index, item in enumerate(data):
            try:
                result.append(self.child.run_validation(item))
            except serializers.ValidationError as exc:
                # DRF keys list items by index, as its ListField does (older stubs typed the keys as str only).
                raise serializers.ValidationError(cast(Any, {index: exc.detail})) from None
            except DjangoValidationError as exc:
                raise serializers.ValidationError(cast(Any, {index: get_error_detail(exc)})) from None
        return result


@extend_schema_field(OpenApiTypes.BINARY)
class UploadFile(serializers.FileField):
    """A file part of a multipart form: ``format: binary`` in the schema, so clients (and the fuzzer) send a file."""
