"""Dify's External Knowledge API: ``POST /dify/retrieval`` searches one KB a key reaches, as Dify asks.

Dify sends ``Authorization: Bearer <key>`` and ``{knowledge_id, query, retrieval_setting: {top_k, score_threshold},
metadata_condition?}`` and reads ``{"records": [{content, score, title, metadata}]}``; errors are ``{"error_code",
"error_msg"}`` (1001 not a bearer key, 1002 a key refused, 2001 a KB the key does not reach). The key is a KB key or
an assistant key (``knowledge_id`` one of its KBs). Registering, Dify POSTs the key without a body and refuses the
endpoint on 403, 404 or 502: a good key is a 400 here, a wrong one a 403.
"""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from assistants.dify_conditions import RECORD_FIELDS, MetadataCondition, metadata_condition
from assistants.errors import AssistantsError
from assistants.keys import bearer_key, key_authenticate
from assistants.models import ApiKey
from assistants.services import key_search
from core.errors import CODES, ApplicationError, CoreError, ErrorCode, fail, message
from core.http.body import body_over_limit, json_body
from knowledge.document_fields import document_fields
from knowledge.models import Document
from knowledge.retrieval.protocols import SearchFilters
from knowledge.retrieval.request import SearchRequest
from knowledge.retrieval.types import Candidate
from knowledge.services.query_input import MAX_TOP_K, query_clean

MAX_BODY_BYTES = 64 * 1024
DEFAULT_TOP_K = 5
# Dify's error codes for ours; any other failure carries its HTTP status as its error_code.
DIFY_CODES = {"key_missing": (1001, 403), "key_invalid": (1002, 403), "kb_not_found": (2001, 404),
              "assistant_unavailable": (2001, 404)}


def dify_error(exc: ApplicationError) -> JsonResponse:
    """``{"error_code", "error_msg"}`` (and our registered ``code``) with Dify's status for its three codes."""
    number, status = DIFY_CODES.get(exc.code, (exc.status_code, exc.status_code))
    response = JsonResponse({"error_code": number, "error_msg": exc.message, "code": exc.code}, status=status,
                            json_dumps_params={"ensure_ascii": False})
    if "retry_after" in exc.extra:
        response["Retry-After"] = str(exc.extra["retry_after"])
    return response


def _coded(code: ErrorCode) -> ApplicationError:
    exc = ApplicationError(message(code), code=str(code))
    exc.status_code = CODES[code].http_status or 400
    return exc


# --- the body --------------------------------------------------------------------------------------------------

def _knowledge_id(value: Any) -> int:
    text = str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    if not text.isdigit() or len(text) > 18:
        raise fail(AssistantsError.INVALID_RETRIEVAL_REQUEST, "knowledge_id")
    return int(text)


def _setting(value: Any) -> tuple[int, float]:
    """(top_k, score_threshold): top_k 1 and up (above ``MAX_TOP_K``: that many), the threshold 0 to 1."""
    value = {} if value is None else value
    if not isinstance(value, dict):
        raise fail(AssistantsError.INVALID_RETRIEVAL_REQUEST, "retrieval_setting", limit=MAX_TOP_K)
    top_k, threshold = value.get("top_k", DEFAULT_TOP_K), value.get("score_threshold", 0.0)
    threshold = 0.0 if threshold is None else threshold
    if (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1 or isinstance(threshold, bool)
            or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1):
        raise fail(AssistantsError.INVALID_RETRIEVAL_REQUEST, "retrieval_setting", limit=MAX_TOP_K)
    return min(top_k, MAX_TOP_K), float(threshold)


def _read(request: HttpRequest) -> dict[str, Any]:
    declared = body_over_limit(request, MAX_BODY_BYTES)
    if declared is not None:
        raise fail(CoreError.BODY_TOO_LARGE, size=declared, limit=MAX_BODY_BYTES)
    body = json_body(request, MAX_BODY_BYTES)
    if not isinstance(body, dict) or "knowledge_id" not in body or "query" not in body:
        raise fail(AssistantsError.INVALID_RETRIEVAL_REQUEST)
    return body


# --- the search ------------------------------------------------------------------------------------------------

def record_metadata(c: Candidate, fields: dict[str, Any]) -> dict[str, Any]:
    """A record's ``metadata``: the document's own fields (knowledge/document_fields.py) and ``RECORD_FIELDS``; what
    a ``metadata_condition`` can name. Nothing ingestion wrote (the parser's metadata, timings) is in it."""
    where = {"document_id": c.document_id, "chunk_id": c.chunk_id, "title": c.title or c.source_name,
             "source_name": c.source_name, "section": " › ".join(c.section_path or []), "page": c.page_start,
             "source_url": c.source_url, "chunk_type": c.chunk_type}
    return {**fields, **{name: where[name] for name in RECORD_FIELDS}}


def _record(c: Candidate, metadata: dict[str, Any]) -> dict[str, Any]:
    return {"content": c.content, "score": round(float(c.relevance or 0.0), 4),
            "title": c.title or c.source_name, "metadata": metadata}


def _filters(condition: MetadataCondition) -> SearchFilters:
    """The search's first narrowing: ``is`` on a chunk type, a document id or a source name exactly; on any other
    name but the record's own, the search's metadata equality (which the document's fields take part in)."""
    chunk_types, document_ids, source_names, metadata = [], [], [], []
    for name, value in condition.pushed_down():
        if name == "chunk_type":
            chunk_types.append(value)
        elif name == "document_id" and value.isdigit() and len(value) <= 18:
            document_ids.append(int(value))
        elif name == "source_name":
            source_names.append(value)
        elif name not in RECORD_FIELDS:
            metadata.append((name, value))
    return SearchFilters(chunk_types=tuple(chunk_types), document_ids=tuple(document_ids),
                         source_names=tuple(source_names), metadata=tuple(metadata))


def retrieve(key: ApiKey, *, kb_id: int, query: str, top_k: int, threshold: float,
             condition: MetadataCondition) -> list[dict[str, Any]]:
    """The records of ``kb_id`` (one the key reaches now) for ``query``, at least ``threshold`` relevant, best first.

    With a condition the search is narrowed first (``_filters``) and asked for ``MAX_TOP_K``; every condition is
    then tested on each record's ``metadata``, and the ``top_k`` best that pass are kept (dify_conditions.py).
    """
    request = SearchRequest(query=query, top_k=MAX_TOP_K if condition.conditions else top_k,
                            filters=_filters(condition))
    result = key_search(key, request, kb_ids=[kb_id])
    candidates = [c for c in result.candidates if float(c.relevance or 0.0) >= threshold]
    documents = dict(Document.objects.filter(pk__in={c.document_id for c in candidates})
                     .values_list("pk", "metadata"))
    records = []
    for c in candidates:
        metadata = record_metadata(c, document_fields(documents.get(c.document_id)))
        if condition.holds(metadata):
            records.append(_record(c, metadata))
    return records[:top_k]


@csrf_exempt  # a bearer key, never a cookie
def retrieval(request: HttpRequest) -> HttpResponse:
    """``POST /dify/retrieval``: authenticate the key, read the body, search (Dify's errors for failures)."""
    if request.method != "POST":
        response = dify_error(_coded(CoreError.METHOD_NOT_ALLOWED))
        response["Allow"] = "POST"
        return response
    try:
        key = key_authenticate(bearer_key(request.headers.get("Authorization", "")))
        body = _read(request)
        kb_id = _knowledge_id(body.get("knowledge_id"))
        query = query_clean(body.get("query"))
        top_k, threshold = _setting(body.get("retrieval_setting"))
        condition = metadata_condition(body.get("metadata_condition"))
        records = retrieve(key, kb_id=kb_id, query=query, top_k=top_k, threshold=threshold, condition=condition)
    except ApplicationError as exc:
        return dify_error(exc)
    return JsonResponse({"records": records}, json_dumps_params={"ensure_ascii": False})


@csrf_exempt  # a JSON 404 for any method, never a CSRF page
def not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Any other path under /dify/: a 404 in Dify's error shape."""
    return dify_error(_coded(CoreError.NOT_FOUND))
