"""Paged list endpoints, shared by every API module (``knowledge.api``, ``chat.api``): the page-size rule and the base view."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db.models import QuerySet
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.views import APIView

from core.errors import CoreError, fail


class Pagination(PageNumberPagination):
    """Pages of ``page_size`` (default 20): a whole number from 1 to 100, else 400 ``invalid_page_size``.

    DRF's own falls back to the default for anything it cannot read (``page_size=null``, ``0``,
    ``abc``) and cuts a larger one to the maximum; here the schema's limits are the server's.
    """

    page_size_query_param = "page_size"
    max_page_size = 100

    def get_page_size(self, request: Request) -> int | None:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 3 and 1 <= int(raw) <= self.max_page_size):
            raise fail(CoreError.INVALID_PAGE_SIZE, limit=self.max_page_size, on_field="page_size")
        return int(raw)

    def get_page_number(self, request: Request, paginator: Any) -> Any:
        """An empty ``page=`` is refused as any page that is not a number is (404 "Invalid page."), where DRF reads
        it as page 1: the schema's ``page`` is an integer."""
        raw = request.query_params.get(self.page_query_param)
        return raw if raw == "" else super().get_page_number(request, paginator)

    def get_schema_operation_parameters(self, view: APIView) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"]["maximum"] = self.max_page_size
        return parameters


class PaginatedView(APIView):
    pagination_class = Pagination

    def paginated(self, qs: QuerySet[Any] | Sequence[Any], serializer_class: type[BaseSerializer[Any]], *,
                  prepare: Callable[[list[Any] | None], object] | None = None) -> Response:
        paginator = self.pagination_class()
        page: list[Any] | None = paginator.paginate_queryset(qs, self.request, view=self)
        if prepare is not None:
            prepare(page)
        return paginator.get_paginated_response(serializer_class(page, many=True).data)
