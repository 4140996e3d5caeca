"""Bad input answers 4xx, never 500 (issue 8, item 5): JSON depth/size limits, unstorable characters,
and concurrent retry / re-index / delete of one document."""
from __future__ import annotations

import json
import threading

import pytest
from django.db import connection

from knowledge.models import Document, DocumentStatus

DEEP = "[" * 50_000 + "]" * 50_000

ENDPOINTS = [
    ("token", "/api/auth/token/"),
    ("search", "/api/search/"),
    ("kbs", "/api/kbs/"),
    ("eval_questions", "/api/kbs/{kb}/eval-questions/"),
    ("tool_search", "/api/tools/search/"),
    ("feedback", "/api/messages/1/feedback/"),
    ("members", "/api/kbs/{kb}/members/"),
]


def post_raw(client, url: str, body: str | bytes):
    return client.post(url, data=body, content_type="application/json")


def error_code(response) -> str:
    body = json.loads(response.content)
    assert set(body["error"]) >= {"code", "message"}, body
    return body["error"]["code"]


@pytest.mark.django_db
@pytest.mark.parametrize("name, path", ENDPOINTS)
def test_deeply_nested_json_is_400_json_too_deep(client_for, alice, kb, name, path):
    response = post_raw(client_for(alice), path.format(kb=kb.pk), DEEP)
    assert response.status_code == 400, response.content[:300]
    assert error_code(response) == "json_too_deep"


@pytest.mark.django_db
def test_deep_json_on_the_unauthenticated_token_endpoint(api_client):
    response = post_raw(api_client, "/api/auth/token/", '{"username": ' + DEEP + "}")
    assert response.status_code == 400
    assert error_code(response) == "json_too_deep"


@pytest.mark.django_db
def test_nesting_within_the_limit_and_brackets_inside_strings_are_fine(client_for, alice, kb):
    # 40 "[" inside a string are not nesting; a depth-3 filter value parses and is judged by the serializer.
    body = {"query": "[" * 40 + "退货", "kb_ids": [kb.pk], "filters": {"doc_type": ["text"]}}
    response = post_raw(client_for(alice), "/api/search/", json.dumps(body))
    assert response.status_code < 500
    assert response.status_code == 200 or error_code(response) not in ("json_too_deep", "parse_error")


@pytest.mark.django_db
def test_malformed_and_oversized_json(client_for, alice, settings):
    client = client_for(alice)
    # Malformed JSON keeps the REST API's existing code, parse_error (SSE and websocket: invalid_json).
    response = post_raw(client, "/api/kbs/", '{"name": ')
    assert response.status_code == 400 and error_code(response) == "parse_error"
    response = post_raw(client, "/api/kbs/", '{"name": NaN}')
    assert response.status_code == 400 and error_code(response) == "parse_error"
    settings.ZHIKU_MAX_JSON_BYTES = 1000
    response = post_raw(client, "/api/kbs/", json.dumps({"name": "x" * 2000}))
    assert response.status_code == 413 and error_code(response) == "body_too_large"


@pytest.mark.django_db
@pytest.mark.parametrize("path, body", [
    ("/api/search/", {"query": "退货", "kb_ids": ["{kb}"], "filters": {"source_name": "a\u0000b"}}),
    ("/api/search/", {"query": "退\u0000货", "kb_ids": ["{kb}"]}),
    ("/api/kbs/", {"name": "知库\u0000"}),
    ("/api/kbs/{kb}/eval-questions/", {"question": "退货\u0000", "expected_documents": []}),
    ("/api/tools/search/", {"query": "退货\u0000", "kb_ids": ["{kb}"]}),
    ("/api/kbs/{kb}/members/", {"username": "bob\u0000", "role": "viewer"}),
])
def test_nul_characters_are_400_invalid_characters(client_for, alice, kb, path, body):
    raw = json.dumps(body).replace('"{kb}"', str(kb.pk))
    response = post_raw(client_for(alice), path.format(kb=kb.pk), raw)
    assert response.status_code == 400, response.content[:300]
    assert error_code(response) == "invalid_characters"
    assert "NUL" in json.loads(response.content)["error"]["message"]


@pytest.mark.django_db
def test_a_lone_surrogate_is_400_invalid_characters(client_for, alice, kb):
    response = post_raw(client_for(alice), "/api/search/", f'{{"query": "\\ud800退货", "kb_ids": [{kb.pk}]}}')
    assert response.status_code == 400
    assert error_code(response) == "invalid_characters"


# --- concurrent document operations ------------------------------------------------------------

GUIDE = "# 退货政策\n\n七天无理由退货，商品需保持完好，包装齐全。\n\n## 运费\n\n满99元包邮。\n"


def _fire(client_factory, requests: list[tuple[str, str]]) -> list[int]:
    """Send the requests from parallel threads, released together; their status codes."""
    barrier = threading.Barrier(len(requests))
    statuses: list[int] = [0] * len(requests)
    errors: list[BaseException] = []

    def worker(i: int, method: str, url: str) -> None:
        try:
            client = client_factory()
            barrier.wait(timeout=30)
            statuses[i] = getattr(client, method)(url).status_code
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            statuses[i] = 599
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i, m, u)) for i, (m, u) in enumerate(requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    return statuses


@pytest.mark.django_db(transaction=True)
def test_parallel_reindex_of_one_document_never_500s(client_for, alice, kb, ingest):
    ingest(kb, {"guide.md": GUIDE})
    document = Document.objects.get(kb=kb, status=DocumentStatus.READY)
    url = f"/api/kbs/{kb.pk}/documents/{document.pk}/reindex/"
    statuses = _fire(lambda: client_for(alice), [("post", url)] * 4)
    assert all(s < 500 for s in statuses), statuses
    assert set(statuses) <= {202, 404, 409}, statuses
    assert statuses.count(202) >= 1
    # One version serves the source, with its chunks; nothing is left half-done.
    ready = Document.objects.filter(kb=kb, source_name="guide.md", status=DocumentStatus.READY)
    assert ready.count() == 1 and ready.get().chunks.count() > 0
    assert not Document.objects.filter(kb=kb, status__in=[DocumentStatus.PENDING, DocumentStatus.PROCESSING]).exists()


@pytest.mark.django_db(transaction=True)
def test_parallel_reindex_retry_and_delete_of_one_document_never_500s(client_for, alice, kb, ingest):
    ingest(kb, {"guide.md": GUIDE})
    document = Document.objects.get(kb=kb, status=DocumentStatus.READY)
    base = f"/api/kbs/{kb.pk}/documents/{document.pk}/"
    requests = [("post", base + "reindex/"), ("delete", base), ("post", base + "retry/"), ("post", base + "reindex/")]
    statuses = _fire(lambda: client_for(alice), requests)
    assert all(s < 500 for s in statuses), statuses
    assert set(statuses) <= {202, 204, 404, 409}, statuses
    assert not Document.objects.filter(kb=kb, status__in=[DocumentStatus.PENDING, DocumentStatus.PROCESSING]).exists()
    assert Document.objects.filter(kb=kb, source_name="guide.md", status=DocumentStatus.READY).count() <= 1
