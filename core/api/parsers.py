"""The API's JSON parser: DRF's, with the size, depth and character checks of ``core.safejson``."""
from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from core import safejson
from core.errors import ApplicationError, CoreError, fail


class SafeJSONParser(JSONParser):
    """Refuses bodies over ``ZHIKU_MAX_JSON_BYTES`` (413 ``body_too_large``), nesting deeper than
    ``ZHIKU_MAX_JSON_DEPTH`` (400 ``json_too_deep``), malformed JSON (400 ``parse_error``, the REST
    API's code for it before these limits; the websocket and SSE say ``invalid_json``) and NUL /
    lone-surrogate strings (400 ``invalid_characters``)."""

    def parse(self, stream: IO[Any] | None, media_type: str | None = None,
              parser_context: Mapping[str, Any] | None = None) -> Any:  # any JSON value, not only an object
        parser_context = parser_context or {}
        limit = safejson.max_bytes()
        request = parser_context.get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        try:
            if declared and int(declared) > limit:
                raise fail(CoreError.BODY_TOO_LARGE, size=int(declared), limit=limit)
        except ValueError:
            pass
        raw = stream.read(limit + 1) if stream is not None else b""
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        if encoding.lower().replace("_", "-") not in ("utf-8", "utf8"):
            try:
                raw = raw.decode(encoding).encode("utf-8", "surrogatepass")
            except (UnicodeError, LookupError):
                pass
        try:
            return safejson.loads(raw, limit_bytes=limit)
        except ApplicationError as exc:
            if exc.code == "invalid_json":
                raise ParseError(exc.message) from None
            raise
