"""The search endpoint: POST /api/search/ → hit or not found, results with every score by name, timings."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from knowledge.api.schema import errors
from knowledge.api.serializers import StrictInput
from knowledge.retrieval.pipeline import MODES
from knowledge.services.search import MAX_KBS, MAX_QUERY_CHARS, MAX_TOP_K, parse_filters, search_cached_payload


class SearchInput(StrictInput):
    query = serializers.CharField(max_length=MAX_QUERY_CHARS, trim_whitespace=True)
    kb_ids = serializers.ListField(child=serializers.IntegerField(min_value=1), min_length=1, max_length=MAX_KBS)
    top_k = serializers.IntegerField(min_value=1, max_value=MAX_TOP_K, required=False)
    mode = serializers.ChoiceField(choices=MODES, default="hybrid")
    filters = serializers.DictField(required=False)
    rerank = serializers.BooleanField(required=False, allow_null=True, default=None)
    debug = serializers.BooleanField(default=False)
    expand_neighbours = serializers.IntegerField(min_value=0, max_value=3, default=0)
    merge_adjacent = serializers.BooleanField(default=False)


class SearchView(APIView):
    """Hybrid search over the KBs given; every KB must be readable by the caller (else 404)."""

    @extend_schema(request=SearchInput, responses={200: dict, **errors(404)})
    def post(self, request):
        data = SearchInput(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        payload = search_cached_payload(
            user=request.user, query=v["query"], kb_ids=v["kb_ids"], top_k=v.get("top_k"), mode=v["mode"],
            filters=parse_filters(v.get("filters")), rerank=v.get("rerank"), debug=v["debug"],
            expand_neighbours=v["expand_neighbours"], merge_adjacent=v["merge_adjacent"],
        )
        return Response(payload)
