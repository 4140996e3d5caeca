"""A document's own fields (knowledge/document_fields.py): set by an editor with PATCH, checked (400
``invalid_document_fields``), kept apart from what ingestion writes, carried to the next version, matched by the
search's metadata filter."""
from __future__ import annotations

import pytest

from knowledge.models import Document
from tests.knowledge.api.test_api import GUIDE, GUIDE_V2, error_of, kb_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def guide(kb, ingest, alice):
    (document,) = ingest(kb, {"guide.md": GUIDE}, user=alice)
    assert document.status == "ready", document.error_message
    return document


def patch(client, kb, document, body):
    return client.patch(kb_url(kb, f"documents/{document.pk}/"), body, format="json")


def test_an_editor_sets_fields_beside_what_ingestion_wrote_and_the_search_filter_matches_them(client_for, alice, kb,
                                                                                               guide):
    client = client_for(alice)
    response = patch(client, kb, guide, {"fields": {"team": "售后", "year": 2026, "tags": ["退货", "运费"]}})
    assert response.status_code == 200, response.data
    metadata = Document.objects.get(pk=guide.pk).metadata
    assert metadata["fields"] == {"team": "售后", "year": 2026, "tags": ["退货", "运费"]}
    assert "timings_ms" in metadata and response.data["metadata"]["fields"]["team"] == "售后"  # ingestion's, untouched

    def found(metadata_filter):
        body = {"query": "退货运费", "kb_ids": [kb.pk], "filters": {"metadata": metadata_filter}}
        return client.post("/api/search/", body, format="json").data["results"]

    assert found({"team": "售后"}) and found({"year": "2026"})
    assert found({"team": "销售"}) == []
    assert patch(client, kb, guide, {"fields": {}}).status_code == 200  # {} clears them
    assert Document.objects.get(pk=guide.pk).metadata["fields"] == {} and found({"team": "售后"}) == []


def test_a_new_version_keeps_the_fields(client_for, alice, kb, guide, ingest):
    patch(client_for(alice), kb, guide, {"fields": {"team": "售后"}})
    (newer,) = ingest(kb, {"guide.md": GUIDE_V2}, user=alice)
    assert newer.pk == guide.pk and newer.version > guide.version and newer.status == "ready"  # one id, a new version
    assert newer.metadata["fields"] == {"team": "售后"} and "timings_ms" in newer.metadata


@pytest.mark.parametrize("fields", [
    "team=售后", ["team"], {"title": "另一个标题"}, {"chunk_type": "faq"}, {"": "x"}, {" team": "x"},
    {"team": {"nested": 1}}, {"team": "x" * 501}, {"team": [["a"]]}, {f"k{i}": i for i in range(33)},
])
def test_bad_fields_are_400_and_change_nothing(client_for, alice, kb, guide, fields):
    response = patch(client_for(alice), kb, guide, {"fields": fields})
    assert response.status_code == 400 and error_of(response)["code"] == "invalid_document_fields"
    assert "fields" not in Document.objects.get(pk=guide.pk).metadata
