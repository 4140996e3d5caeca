"""Reading a request's input for the API views: a serializer's checked data, a multipart form's text field."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework.serializers import BaseSerializer

from core.errors import fail


def parse(serializer_class: type[BaseSerializer[Any]], data: Any, **kwargs: Any) -> dict[str, Any]:
    """``serializer_class``'s validated data, or DRF's ValidationError (400 ``invalid`` with ``fields``)."""
    serializer = serializer_class(data=data, **kwargs)
    serializer.is_valid(raise_exception=True)
    validated: dict[str, Any] = serializer.validated_data
    return validated


def form_text(data: Mapping[str, Any], name: str, *, max_length: int) -> str:
    """An optional text field of a multipart form ("" when absent); a file part or a longer value is 400 ``invalid``."""
    raw = data.get(name, "")
    if not isinstance(raw, str) or len(raw) > max_length:
        raise fail("invalid", "form_text", field=name, limit=max_length, on_field=name)
    return raw
