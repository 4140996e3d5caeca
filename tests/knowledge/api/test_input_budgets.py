"""Every list and map of a request has a budget, checked before its contents and answered 400 in the API's
shape; text fields take only strings; pagination refuses what it cannot read; malformed or oversized forms
are answered in the API's shape, by the real server too (docs/api.md, "Input budgets")."""
from __future__ import annotations

import http.client
import json
from urllib.parse import urlparse

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge.models import Document, EvalQuestion, KnowledgeBase
from knowledge.services.search import MAX_FILTER_DOCUMENTS, MAX_METADATA_KEYS
from tests.knowledge.api.test_api import GUIDE, error_of, kb_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def guide(kb, ingest, alice):
    (document,) = ingest(kb, {"guide.md": GUIDE}, user=alice)
    assert document.status == "ready", document.error_message
    return document


def search(client, kb, filters: dict):
    return client.post("/api/search/", {"query": "退货", "kb_ids": [kb.pk], "filters": filters}, format="json")


# --- search filters: budgets before any SQL, and a metadata filter whose cost is linear ---------------

def test_a_metadata_filter_of_55000_keys_is_refused_by_its_budget(client_for, alice, kb, guide):
    # 55,000 keys in about 0.9 MB, under the 1 MiB body cap: once a condition each, built and planned per key.
    metadata = {f"k{i}": "v" for i in range(55_000)}
    response = search(client_for(alice), kb, {"metadata": metadata})
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "invalid" and list(error["fields"]["filters"]) == ["metadata"]
    assert str(MAX_METADATA_KEYS) in error["fields"]["filters"]["metadata"][0]


def test_the_metadata_budget_is_32_keys(client_for, alice, kb, guide):
    client = client_for(alice)
    Document.objects.filter(pk=guide.pk).update(metadata={f"k{i}": "v" for i in range(MAX_METADATA_KEYS)})
    within = search(client, kb, {"metadata": {f"k{i}": "v" for i in range(MAX_METADATA_KEYS)}})
    assert within.status_code == 200 and within.json()["results"], within.content
    over = search(client, kb, {"metadata": {f"k{i}": "v" for i in range(MAX_METADATA_KEYS + 1)}})
    assert over.status_code == 400 and "metadata" in error_of(over)["fields"]["filters"]


@pytest.mark.parametrize("mode", ["keyword", "vector"])
def test_metadata_keys_are_values_in_the_sql_never_part_of_it(client_for, alice, kb, guide, mode):
    """Any key (a dash, a quote, Django's lookup separator) is compared as data, in both retrieval paths."""
    odd = {"team-name": "售后", "it's": True, "a__contains": 3}
    Document.objects.filter(pk=guide.pk).update(metadata=odd)
    client = client_for(alice)
    body = {"query": "退货运费", "kb_ids": [kb.pk], "mode": mode}
    hit = client.post("/api/search/", {**body, "filters": {"metadata": odd}}, format="json")
    assert hit.status_code == 200 and {r["document"]["id"] for r in hit.json()["results"]} == {guide.pk}
    # Every pair must hold: one wrong value, or a value of another type's text, finds nothing.
    for wrong in ({**odd, "a__contains": 4}, {"it's": "yes"}, {"team-name') OR TRUE --": "x"}):
        miss = client.post("/api/search/", {**body, "filters": {"metadata": wrong}}, format="json")
        assert miss.status_code == 200 and miss.json()["results"] == [], wrong


@pytest.mark.parametrize("filters, field", [
    ({"document_ids": list(range(1, 100_002))}, "document_ids"),  # the audit's 100k ids, 1.6 s before
    ({"source_names": ["a.md"] * 101}, "source_names"),
    ({"chunk_types": ["text"] * 5}, "chunk_types"),
    ({"chunk_types": ["slide"]}, "chunk_types"),
    ({"metadata": {"k": "v" * 501}}, "metadata"),
    ({"metadata": {"k" * 201: "v"}}, "metadata"),
    ({"metadata": {"k": None}}, "metadata"),
    ({"metadata": {"k": ["v"]}}, "metadata"),
])
def test_filter_lists_and_maps_have_budgets(client_for, alice, kb, filters, field):
    response = search(client_for(alice), kb, filters)
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "invalid" and list(error["fields"]["filters"]) == [field]


def test_a_list_over_its_budget_is_refused_before_its_items_are_read(client_for, alice, kb):
    response = search(client_for(alice), kb, {"document_ids": ["a"] * (MAX_FILTER_DOCUMENTS + 1)})
    assert response.status_code == 400
    # One message for the length, not an error for each of 1,001 items.
    assert error_of(response)["fields"]["filters"]["document_ids"] == [f"该字段不能超过 {MAX_FILTER_DOCUMENTS} 个元素。"]


def test_a_list_stops_at_its_first_bad_item(client_for, alice):
    """144,000 blank synonyms (0.6 MB) answer one error, not one per item (DRF's own built them all, for seconds)."""
    body = {"name": "词表", "synonyms": [[""] * 16] * 9_000}
    response = client_for(alice).post("/api/kbs/", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"synonyms": {"0": {"0": ["该字段不能为空。"]}}}


# --- text fields take strings only --------------------------------------------------------------------

@pytest.mark.parametrize("path, body, field", [
    ("eval-questions/", {"text": 0}, "text"),
    ("eval-questions/", {"text": "运费", "relevant": [7]}, "relevant"),
    ("chunks/", {"document": 1, "content": 12}, "content"),
    ("members/", {"username": 5, "role": "viewer"}, "username"),
])
def test_a_number_is_not_text(client_for, alice, kb, path, body, field):
    response = client_for(alice).post(kb_url(kb, path), body, format="json")
    assert response.status_code == 400, response.content
    assert error_of(response)["code"] == "invalid" and field in error_of(response)["fields"]
    assert not EvalQuestion.objects.exists()


def test_a_kb_name_that_is_a_number_is_refused(client_for, alice):
    response = client_for(alice).post("/api/kbs/", {"name": 2024}, format="json")
    assert response.status_code == 400 and "name" in error_of(response)["fields"]
    assert not KnowledgeBase.objects.filter(name="2024").exists()


# --- pagination ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["null", "0", "-1", "abc", "", "101", "1.5", "２０"])
def test_page_size_outside_1_to_100_is_refused(client_for, alice, kb, guide, value):
    client = client_for(alice)
    for path in ("/api/kbs/", kb_url(kb, "chunks/"), kb_url(kb, "documents/")):
        response = client.get(path, {"page_size": value})
        assert response.status_code == 400, (path, value, response.content)
        error = error_of(response)
        assert error["code"] == "invalid_page_size" and "page_size" in error["fields"]


def test_page_size_within_its_range_pages(client_for, alice, kb, guide, ingest):
    ingest(kb, {"more.md": "# 安装\n\n运行 make run。\n"}, user=alice)
    client = client_for(alice)
    one = client.get(kb_url(kb, "documents/"), {"page_size": "1"}).json()
    assert len(one["results"]) == 1 and one["count"] == 2 and one["next"]
    assert len(client.get(kb_url(kb, "documents/"), {"page_size": "100"}).json()["results"]) == 2


# --- forms: the upload and the preview ------------------------------------------------------------------

def test_a_file_where_text_is_expected_is_a_400(client_for, alice, kb):
    payload = {"files": [SimpleUploadedFile("a.md", b"# A\n\ntext\n")],
               "restricted_to_groups": SimpleUploadedFile("groups.txt", b"hr")}
    response = client_for(alice).post(kb_url(kb, "documents/"), payload, format="multipart")
    assert response.status_code == 400 and "restricted_to_groups" in error_of(response)["fields"]
    assert not Document.objects.exists()


def test_more_group_names_than_the_budget_are_refused(client_for, alice, kb):
    payload = {"files": [SimpleUploadedFile("a.md", b"# A\n\ntext\n")],
               "restricted_to_groups": ",".join(f"g{i}" for i in range(101))}
    response = client_for(alice).post(kb_url(kb, "documents/"), payload, format="multipart")
    assert response.status_code == 400 and "restricted_to_groups" in error_of(response)["fields"]


def test_django_form_limits_answer_in_the_api_shape(client_for, api_client, alice, kb, settings):
    """Django refuses too many files or fields, or oversized fields, with a bare 400 page of its own."""
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 2
    files = {"file": [SimpleUploadedFile(f"{i}.md", b"# A\n\ntext\n") for i in range(3)]}
    response = client_for(alice).post(kb_url(kb, "documents/preview/"), files, format="multipart")
    assert response.status_code == 400 and error_of(response)["code"] == "too_many_files"

    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 3
    form = "&".join(f"f{i}=x" for i in range(5))
    response = api_client.post("/api/auth/token/", form, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400 and error_of(response)["code"] == "too_many_fields"

    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = api_client.post("/api/auth/token/", {"username": "alice", "password": "x" * 2000}, format="multipart")
    assert response.status_code == 413 and error_of(response)["code"] == "body_too_large"


def test_json_endpoints_read_json_only(client_for, alice, kb):
    response = client_for(alice).post("/api/search/", {"query": "退货", "kb_ids": [str(kb.pk)]}, format="multipart")
    assert response.status_code == 415 and error_of(response)["code"] == "unsupported_media_type"


# --- the real server: daphne hands every body to the application -----------------------------------------

MULTIPART_POSTS = ["/api/auth/token/", "/api/kbs/{kb}/documents/", "/api/kbs/{kb}/documents/preview/"]
JSON_POSTS = ["/api/search/", "/api/tools/search/", "/api/kbs/", "/api/kbs/{kb}/eval-questions/",
              "/api/kbs/{kb}/evaluate/", "/api/messages/1/feedback/", "/api/kbs/{kb}/members/", "/api/kbs/{kb}/chunks/"]
MALFORMED = [b"--zhiku--\r\n", b"x", b"\r\n"]  # no parts, no boundary line, a bare line break


@pytest.mark.django_db(transaction=True)
def test_malformed_multipart_bodies_are_answered_in_the_api_shape_by_daphne(server, alice, make_kb):
    """Twisted parsed POST forms before daphne and answered a bare 400 for one it could not parse."""
    from tests.helpers import api_token

    kb = make_kb(alice, "forms")
    token = api_token(alice)
    address = urlparse(server)
    answers = {}
    for path in MULTIPART_POSTS + JSON_POSTS:
        for body in MALFORMED:
            connection = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
            connection.request("POST", path.format(kb=kb.pk), body=body, headers={
                "Content-Type": "multipart/form-data; boundary=zhiku", "Authorization": f"Token {token}"})
            response = connection.getresponse()
            raw = response.read()
            connection.close()
            assert response.getheader("Content-Type", "").startswith("application/json"), (path, body, response.status, raw)
            answers[path, body] = (response.status, json.loads(raw)["error"]["code"])
    for (path, body), (status, code) in answers.items():
        if path in MULTIPART_POSTS:
            assert (status, code) in ((400, "parse_error"), (400, "invalid"), (400, "no_files")), (path, body, status, code)
        else:
            assert (status, code) == (415, "unsupported_media_type"), (path, body, status, code)
