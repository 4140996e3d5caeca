"""The search endpoint: POST /api/search/ → hit or not found, results with every score by name, timings.

Every list and map of the body has a budget (``knowledge.services.search``), checked here and
stated in the schema: a filter costs work per candidate row of every KB searched, so its size is
bounded before any SQL runs.
"""
from __future__ import annotations

import json
import math
from typing import TypedDict

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.fields import ItemList, StrictInput, Text
from core.api.schema import errors
from knowledge.models import ChunkType
from knowledge.retrieval.pipeline import MODES
from knowledge.retrieval.request import SearchRequest
from knowledge.services.query_input import MAX_KBS, MAX_QUERY_CHARS, MAX_TOP_K
from knowledge.services.search import (
    MAX_FILTER_DOCUMENTS,
    MAX_FILTER_SOURCES,
    MAX_METADATA_KEY_CHARS,
    MAX_METADATA_KEYS,
    MAX_METADATA_VALUE_CHARS,
    Search,
    filters_from,
)
from knowledge.services.search_cache import cached_payload


class _Bounds(TypedDict):
    min_value: int
    max_value: int


ID: _Bounds = {"min_value": 1, "max_value": 2**63 - 1}  # a bigint primary key


@extend_schema_field({
    "type": "object",
    "maxProperties": MAX_METADATA_KEYS,
    "additionalProperties": {"anyOf": [
        {"type": "string", "maxLength": MAX_METADATA_VALUE_CHARS}, {"type": "number"}, {"type": "boolean"},
    ]},
    "description": f"Chunk or document metadata, or the document's own fields, equal to these values (compared as text), at most "
                   f"{MAX_METADATA_KEYS} keys of at most {MAX_METADATA_KEY_CHARS} characters.",
})
class MetadataFilter(serializers.Field):
    """``{key: value}`` → sorted ``((key, text), ...)``: a string, number or boolean each, compared as text."""

    default_error_messages = {
        "not_a_map": _("Expected an object of keys and values."),
        "too_many_keys": _("At most {limit} keys."),
        "key_too_long": _("A key has at most {limit} characters."),
        "value_too_long": _("A value has at most {limit} characters."),
        "not_scalar": _("Each value is a string, a number or a boolean."),
    }

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            self.fail("not_a_map")
        if len(data) > MAX_METADATA_KEYS:
            self.fail("too_many_keys", limit=MAX_METADATA_KEYS)
        pairs = []
        for key, value in data.items():
            if len(key) > MAX_METADATA_KEY_CHARS:
                self.fail("key_too_long", limit=MAX_METADATA_KEY_CHARS)
            if isinstance(value, bool):
                text = json.dumps(value)  # "true" / "false", as PostgreSQL's ->> reads a JSON boolean
            elif isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
                text = str(value)
            elif isinstance(value, str):
                if len(value) > MAX_METADATA_VALUE_CHARS:
                    self.fail("value_too_long", limit=MAX_METADATA_VALUE_CHARS)
                text = value
            else:
                self.fail("not_scalar")
            pairs.append((key, text))
        return tuple(sorted(pairs))

    def to_representation(self, value):
        return dict(value)


class SearchFiltersInput(StrictInput):
    """Narrowing a search: every condition given must hold; an empty list is no condition."""

    document_ids = ItemList(child=serializers.IntegerField(**ID), required=False, max_length=MAX_FILTER_DOCUMENTS)
    source_names = ItemList(child=Text(max_length=500, trim_whitespace=False), required=False,
                                         max_length=MAX_FILTER_SOURCES)
    chunk_types = ItemList(child=serializers.ChoiceField(choices=ChunkType.choices), required=False,
                                        max_length=len(ChunkType.choices))
    metadata = MetadataFilter(required=False)


class SearchInput(StrictInput):
    query = Text(max_length=MAX_QUERY_CHARS, trim_whitespace=True)
    kb_ids = ItemList(child=serializers.IntegerField(**ID), min_length=1, max_length=MAX_KBS)
    top_k = serializers.IntegerField(min_value=1, max_value=MAX_TOP_K, required=False)
    mode = serializers.ChoiceField(choices=MODES, default="hybrid")
    filters = SearchFiltersInput(required=False)
    rerank = serializers.BooleanField(required=False, allow_null=True, default=None)
    debug = serializers.BooleanField(default=False)
    expand_neighbours = serializers.IntegerField(min_value=0, max_value=3, default=0)
    merge_adjacent = serializers.BooleanField(default=False)


class SearchView(APIView):
    """Hybrid search over the KBs given; every KB must be readable by the caller (else 404)."""

    @extend_schema(summary=_("Hybrid search over the KBs given"), request=SearchInput, responses={200: dict, **errors(404)})
    def post(self, request):
        data = SearchInput(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        asked = SearchRequest(
            query=v["query"], top_k=v.get("top_k"), mode=v["mode"], filters=filters_from(v.get("filters")),
            rerank=v.get("rerank"), debug=v["debug"], expand_neighbours=v["expand_neighbours"],
            merge_adjacent=v["merge_adjacent"],
        )
        payload = cached_payload(Search(asked, user=request.user, kb_ids=v["kb_ids"]))
        return Response(payload)
