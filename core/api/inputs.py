"""Reading a request's input for the API views: a serializer's checked data, a multipart form's text field."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework.serializers import BaseSerializer

from core.api.fields import QueryValues
from core.errors import CoreError, fail


def parse(serializer_class: type[BaseSerializer[Any]], data: Any, **kwargs: Any) -> dict[str, Any]:
    """``serializer_class``'s validated data, or DRF's ValidationError (400 ``invalid`` with ``fields``)."""
    serializer = serializer_class(data=data, **kwargs)
    serializer.is_valid(raise_exception=True)
    validated: dict[str, Any] = serializer.validated_data
    return validated


def parse_query(serializer_class: type[BaseSerializer[Any]], query: Any) -> dict[str, Any]:
    """``parse`` of a query string's parameters, each an ordinary value: DRF reads a QueryDict as an HTML form, where
    an empty value means "left out" (``?since=`` would be no filter), which the schema's formats do not allow."""
    return parse(serializer_class, QueryValues(query.dict() if hasattr(query, "dict") else query))


def form_text(data: Mapping[str, Any], name: str, *, max_length: int) -> str:
    """An optional text field of a multipart form ("" when absent); a file part or a longer value is 400 ``invalid``."""
    raw = data.get(name, "")
    if not isinstance(raw, str) or len(raw) > max_length:
        raise fail(CoreError.INVALID, "form_text", field=name, limit=max_length, on_field=name)
    return raw
