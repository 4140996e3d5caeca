"""Query parameters as the OpenAPI schema states them: a name the operation does not declare, or a single-valued
one given twice, is refused (400), where Django would ignore the one and take the last of the other.

The schema is the one statement of each operation's parameters (drf-spectacular, ``core.api.schema``); it is
built once per process, on the first API request (about a second) or by the server's warm-up, and read here by the
route that matched. Each parameter's value is checked where it is read, by its view, with its own code; this
module checks only what no view can see: the names and their count. Refused before the view runs, after the
session's sign-in: a request with no credential to a view that needs one gets its 401 first (docs/api.md, "Query
parameters").
"""
from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext
from rest_framework.permissions import AllowAny

from core.errors import ApplicationError, CoreError, fail

_CONVERTER = re.compile(r"<(?:[^>:]+:)?([^>]+)>")
_operations: dict[tuple[str, str], dict[str, bool]] | None = None
_lock = threading.Lock()


def _build() -> dict[tuple[str, str], dict[str, bool]]:
    """(path template, method) → {query parameter name: whether it may repeat (an array)}, from the served schema."""
    from drf_spectacular.generators import SchemaGenerator

    generator = SchemaGenerator()  # type: ignore[no-untyped-call]  # drf-spectacular is unannotated
    schema = generator.get_schema(request=None, public=True)  # type: ignore[no-untyped-call]  # as above
    out: dict[tuple[str, str], dict[str, bool]] = {}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            out[(path, method.upper())] = {p["name"]: p.get("schema", {}).get("type") == "array"
                                           for p in operation.get("parameters", []) if p.get("in") == "query"}
    return out


def operations() -> dict[tuple[str, str], dict[str, bool]]:
    """The schema's query parameters by operation, built on first use (thread-safe)."""
    global _operations
    if _operations is None:
        with _lock:
            if _operations is None:
                _operations = _build()
    return _operations


def template(route: str) -> str:
    """The schema's path for a URL pattern's route: ``api/kbs/<int:kb_id>/`` → ``/api/kbs/{kb_id}/``."""
    return "/" + _CONVERTER.sub(lambda m: "{" + m.group(1) + "}", route)


def refusal(request: HttpRequest, route: str) -> ApplicationError | None:
    """What is wrong with the request's query by its operation's declared parameters; None when nothing is (or the
    operation is not in the schema)."""
    declared = operations().get((template(route), request.method or "GET"))
    if declared is None or not request.GET:
        return None
    unknown = sorted(name for name in request.GET if name not in declared)
    if unknown:
        return fail(CoreError.UNKNOWN_PARAMETER, names=", ".join(repr(n) for n in unknown),
                    extra={"fields": {name: [gettext("Unknown query parameter.")] for name in unknown}})
    repeated = sorted(name for name in request.GET if not declared[name] and len(request.GET.getlist(name)) > 1)
    if repeated:
        return fail(CoreError.REPEATED_PARAMETER, names=", ".join(repeated),
                    extra={"fields": {name: [gettext("Given more than once.")] for name in repeated}})
    return None


def _signed_out(request: HttpRequest) -> bool:
    """No credential at all: no ``Authorization`` header and no signed-in session."""
    user = getattr(request, "user", None)
    return "HTTP_AUTHORIZATION" not in request.META and not (user is not None and user.is_authenticated)


def _public(view_func: Any) -> bool:
    """Whether a DRF view lets anyone call it (every permission class AllowAny)."""
    view = getattr(view_func, "cls", None)
    return view is not None and all(issubclass(p, AllowAny) for p in getattr(view, "permission_classes", ()))


class QueryCheck:
    """Middleware: an API request whose query names a parameter its operation does not declare, or repeats one that
    takes one value, is answered 400 (``unknown_parameter``, ``repeated_parameter``) before its view runs."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func: Any, view_args: Any, view_kwargs: Any) -> HttpResponse | None:
        match = request.resolver_match
        if match is None or not request.path.startswith("/api/") or not request.GET:
            return None
        if _signed_out(request) and not _public(view_func):
            return None         # the view answers 401 first, as it would without a query
        error = refusal(request, match.route)
        if error is None:
            return None
        return JsonResponse({"error": {"code": error.code, "message": str(error.message), **error.extra}},
                            status=error.status_code, json_dumps_params={"ensure_ascii": False})
