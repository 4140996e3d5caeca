"""The API's own field and input types: strict inputs (unknown fields refused), text that is text, lists
bounded before their items are read, file parts. Every app's serializers build on them."""
from __future__ import annotations

import math
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.translation import gettext
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import get_error_detail

from core.errors import ApplicationError, fail

# Group names in a document's restriction (upload form or PATCH): far more than any real restriction names.
MAX_GROUP_NAMES = 100


def finite(value: float) -> None:
    if not math.isfinite(value):
        raise serializers.ValidationError("Must be a finite number.", code="invalid")


def unknown_fields(names: list[str]) -> ApplicationError:
    """400 ``unknown_field``, with ``fields`` keyed by field name like every other error's ``fields``."""
    return fail("unknown_field", fields=", ".join(names), extra={"fields": {name: [gettext("Unknown field.")] for name in names}})


class StrictInput(serializers.Serializer[Any]):
    """An input serializer that rejects fields it does not know (400 ``unknown_field``)."""

    # The schema says so (additionalProperties: false, core.api.schema.AutoSchema). Nested,
    # the unknown names are given under the field's own: "filters.colour".
    def to_internal_value(self, data: Any) -> Any:
        if hasattr(data, "keys"):
            unknown = sorted(set(data.keys()) - set(self.fields))
            if unknown:
                prefix = f"{self.field_name}." if self.parent is not None and self.field_name else ""
                raise unknown_fields([prefix + str(name) for name in unknown])
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
                raise serializers.ValidationError({index: exc.detail}) from None  # type: ignore[dict-item]  # DRF keys list items by index, as its ListField does
            except DjangoValidationError as exc:
                raise serializers.ValidationError({index: get_error_detail(exc)}) from None  # type: ignore[dict-item]  # as above
        return result


@extend_schema_field(OpenApiTypes.BINARY)
class UploadFile(serializers.FileField):
    """A file part of a multipart form: ``format: binary`` in the schema, so clients (and the fuzzer) send a file."""
