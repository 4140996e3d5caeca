"""The API behind the console's document tools: chunking preview and chosen chunking, group restriction edits,
chunks added by hand, and failure messages in the reader's language."""
from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge.models import Chunk, Document, KnowledgeBase, Role
from knowledge.services.kbs import membership_set
from tests.knowledge.api.test_api import CORRUPT_DOCX, GUIDE, error_of, kb_url, upload

pytestmark = pytest.mark.django_db

# One long section of short sentences: how many chunks it makes depends on the chunk size.
LONG = "# 售后手册\n\n## 退货\n\n" + "".join(f"第{i}条：商品签收后七天内可以申请无理由退货，运费由买家承担。" for i in range(60)) + "\n"


@pytest.fixture
def ready_doc(kb, ingest, alice):
    (document,) = ingest(kb, {"guide.md": GUIDE}, user=alice)
    assert document.status == "ready", document.error_message
    return document


def preview(client, kb, name: str, data, **fields):
    payload = {"file": SimpleUploadedFile(name, data.encode() if isinstance(data, str) else data), **fields}
    return client.post(kb_url(kb, "documents/preview/"), payload, format="multipart")


# --- chunking preview -----------------------------------------------------------------

def test_preview_returns_the_chunks_ingestion_would_make_and_stores_nothing(client_for, alice, kb):
    response = preview(client_for(alice), kb, "manual.md", LONG, chunk_size="300", chunk_overlap="40")
    assert response.status_code == 200, response.data
    body = response.data
    assert (body["chunk_size"], body["chunk_overlap"], body["source_name"]) == (300, 40, "manual.md")
    assert body["count"] == len(body["chunks"]) > 5 and not body["truncated"]
    assert all(c["chars"] == len(c["content"]) <= 300 + 40 for c in body["chunks"])
    assert body["chunks"][0]["section_path"] == ["售后手册", "退货"]
    # The last sentence of one chunk opens the next (the overlap).
    first, second = body["chunks"][0]["content"], body["chunks"][1]["content"]
    assert second[:20] in first
    assert not Document.objects.exists() and not Chunk.objects.exists()


def test_an_upload_uses_the_chosen_chunking_and_matches_its_preview(client_for, alice, kb, django_capture_on_commit_callbacks):
    client = client_for(alice)
    shown = preview(client, kb, "manual.md", LONG, chunk_size="300", chunk_overlap="40").data
    default = preview(client, kb, "manual.md", LONG).data
    assert default["chunk_size"] == 800 and default["count"] < shown["count"]
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client, kb, {"manual.md": LONG}, chunk_size="300", chunk_overlap="40")
    assert response.status_code == 202, response.data
    document = Document.objects.get(pk=response.data["documents"][0]["id"])
    assert (document.status, document.chunk_size, document.chunk_overlap) == ("ready", 300, 40)
    stored = list(document.chunks.order_by("ordinal").values_list("content", flat=True))
    assert stored == [c["content"] for c in shown["chunks"]]
    detail = client.get(kb_url(kb, f"documents/{document.pk}/")).data
    assert (detail["chunk_size"], detail["chunk_overlap"]) == (300, 40)


def test_a_new_version_and_a_reindex_keep_the_chosen_chunking(client_for, alice, kb, django_capture_on_commit_callbacks):
    client = client_for(alice)
    with django_capture_on_commit_callbacks(execute=True):
        upload(client, kb, {"manual.md": LONG}, chunk_size="200")
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client, kb, {"manual.md": LONG.replace("七天", "十天")})
    v2 = Document.objects.get(pk=response.data["documents"][0]["document"])
    assert (v2.version, v2.status, v2.chunk_size) == (2, "ready", 200)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(kb_url(kb, f"documents/{v2.pk}/reindex/"))
    assert response.data["chunk_size"] == 200 and Document.objects.get(pk=response.data["document"]).chunk_size == 200


def test_the_same_file_with_other_chunking_is_split_again(client_for, alice, kb, django_capture_on_commit_callbacks):
    client = client_for(alice)
    with django_capture_on_commit_callbacks(execute=True):
        first = upload(client, kb, {"manual.md": LONG}).data["documents"][0]
    with django_capture_on_commit_callbacks(execute=True):
        same = upload(client, kb, {"manual.md": LONG}, chunk_size="800", chunk_overlap="0").data["documents"][0]
    assert same["unchanged"] and same["id"] == first["id"]  # the defaults, said out loud: nothing to redo
    with django_capture_on_commit_callbacks(execute=True):
        finer = upload(client, kb, {"manual.md": LONG}, chunk_size="200").data["documents"][0]
    assert not finer["unchanged"] and finer["version"] == 2
    v1_count = len(preview(client, kb, "manual.md", LONG).data["chunks"])
    v2 = Document.objects.get(pk=finer["document"])
    assert v2.pk == first["id"] and v2.status == "ready" and v2.version == 2 and v2.chunks.count() > v1_count
    assert not Document.objects.filter(pk=finer["id"]).exists()  # folded into the document


@pytest.mark.parametrize("fields", [
    {"chunk_size": "10"}, {"chunk_size": "99999"}, {"chunk_size": "abc"}, {"chunk_size": "-5"}, {"chunk_size": "3.5"},
    {"chunk_overlap": "-1"}, {"chunk_size": "200", "chunk_overlap": "150"}, {"chunk_overlap": "５"},
])
def test_chunking_out_of_range_is_400_invalid_chunking(client_for, alice, kb, fields):
    client = client_for(alice)
    for response in (preview(client, kb, "a.md", GUIDE, **fields), upload(client, kb, {"a.md": GUIDE}, **fields)):
        assert response.status_code == 400, response.data
        error = error_of(response)
        assert error["code"] == "invalid_chunking" and error["message"]
    assert not Document.objects.exists()


def test_preview_makes_the_uploads_checks(client_for, alice, kb, settings):
    client = client_for(alice)
    assert error_of(preview(client, kb, "a.exe", "MZ"))["code"] == "unsupported_type"
    assert error_of(preview(client, kb, "a.md", "   "))["code"] == "empty_file"
    settings.ZHIKU_MAX_UPLOAD_BYTES = 10
    response = preview(client, kb, "a.md", GUIDE)
    assert response.status_code == 413 and error_of(response)["code"] == "file_too_large"


def test_preview_of_a_corrupt_file_is_400_with_the_parse_code_in_the_readers_language(client_for, alice, kb):
    client = client_for(alice)
    response = preview(client, kb, "broken.docx", CORRUPT_DOCX)
    assert response.status_code == 400
    assert error_of(response)["code"] == "corrupt_file" and "损坏" in error_of(response)["message"]
    english = client.post(kb_url(kb, "documents/preview/"), {"file": SimpleUploadedFile("broken.docx", CORRUPT_DOCX)},
                          format="multipart", HTTP_ACCEPT_LANGUAGE="en")
    assert english.data["error"]["message"] == "The file is damaged or cannot be read."


def test_preview_needs_exactly_one_file_and_no_unknown_fields(client_for, alice, kb):
    client = client_for(alice)
    response = client.post(kb_url(kb, "documents/preview/"), {"chunk_size": "300"}, format="multipart")
    assert response.status_code == 400 and error_of(response)["code"] == "no_files"
    response = preview(client, kb, "a.md", GUIDE, colour="red")
    assert response.status_code == 400 and error_of(response)["code"] == "unknown_field"


def test_preview_is_for_editors(client_for, alice, kb, make_user):
    carol, dave = make_user("carol"), make_user("dave")
    membership_set(kb=kb, role=Role.VIEWER, user=carol)
    assert error_of(preview(client_for(carol), kb, "a.md", GUIDE))["code"] == "role_required"
    assert error_of(preview(client_for(dave), kb, "a.md", GUIDE))["code"] == "kb_not_found"


# --- group restriction after upload ---------------------------------------------------------------

def test_an_editor_restricts_a_document_then_lifts_it(client_for, alice, kb, ready_doc, make_user):
    hr = Group.objects.create(name="人事")
    bob, carol, erin = make_user("bob"), make_user("carol"), make_user("erin", groups=[hr])
    membership_set(kb=kb, role=Role.EDITOR, user=bob)
    membership_set(kb=kb, role=Role.VIEWER, user=carol)
    membership_set(kb=kb, role=Role.VIEWER, user=erin)
    url = kb_url(kb, f"documents/{ready_doc.pk}/")
    version = KnowledgeBase.objects.get(pk=kb.pk).version

    response = client_for(bob).patch(url, {"restricted_to_groups": ["人事"]}, format="json")
    assert response.status_code == 200, response.data
    assert response.data["restricted_to_groups"] == ["人事"]
    assert KnowledgeBase.objects.get(pk=kb.pk).version > version  # cached searches expire
    assert client_for(carol).get(url).status_code == 404
    assert client_for(erin).get(url).status_code == 200
    hits = client_for(carol).post("/api/search/", {"query": "退货运费", "kb_ids": [kb.pk]}, format="json").data["results"]
    assert not hits

    version = KnowledgeBase.objects.get(pk=kb.pk).version
    response = client_for(bob).patch(url, {"restricted_to_groups": []}, format="json")
    assert response.status_code == 200 and response.data["restricted_to_groups"] == []
    assert KnowledgeBase.objects.get(pk=kb.pk).version > version
    assert client_for(carol).get(url).status_code == 200


def test_a_restriction_reaches_a_new_version_being_processed(client_for, alice, kb, ready_doc):
    Group.objects.create(name="legal")
    newer = Document.objects.create(kb=kb, source_name=ready_doc.source_name, doc_type="markdown", sha256="c" * 64,
                                    status="pending", version=2, replaces=ready_doc)
    client_for(alice).patch(kb_url(kb, f"documents/{ready_doc.pk}/"), {"restricted_to_groups": ["legal"]}, format="json")
    assert list(newer.restricted_to_groups.values_list("name", flat=True)) == ["legal"]


@pytest.mark.parametrize("body, code", [
    ({"restricted_to_groups": ["nobody"]}, "unknown_group"),
    ({"restricted_to_groups": "人事"}, "invalid"),
    ({}, "invalid"),
    ({"restricted_to_groups": [], "title": "x"}, "unknown_field"),
])
def test_bad_restriction_edits_are_400(client_for, alice, kb, ready_doc, body, code):
    response = client_for(alice).patch(kb_url(kb, f"documents/{ready_doc.pk}/"), body, format="json")
    assert response.status_code == 400 and error_of(response)["code"] == code
    assert not ready_doc.restricted_to_groups.exists()


def test_a_viewer_cannot_change_a_restriction(client_for, alice, kb, ready_doc, make_user):
    carol = make_user("carol")
    membership_set(kb=kb, role=Role.VIEWER, user=carol)
    response = client_for(carol).patch(kb_url(kb, f"documents/{ready_doc.pk}/"), {"restricted_to_groups": []}, format="json")
    assert response.status_code == 403 and error_of(response)["code"] == "role_required"


# --- chunks added by hand ---------------------------------------------------------------------------

def test_an_added_chunk_is_embedded_indexed_and_found(client_for, alice, kb, ready_doc):
    client = client_for(alice)
    before = ready_doc.chunks.count()
    version = KnowledgeBase.objects.get(pk=kb.pk).version
    # Search first, so the keyword index and the result cache exist and must follow the change.
    client.post("/api/search/", {"query": "以旧换新补贴", "kb_ids": [kb.pk], "mode": "keyword"}, format="json")
    text = "以旧换新：交回旧机可抵扣二百元，补贴在下单时自动计算。"
    response = client.post(kb_url(kb, "chunks/"), {"document": ready_doc.pk, "content": text, "section_path": ["退货政策", "以旧换新"]},
                           format="json")
    assert response.status_code == 201, response.data
    assert response.data["ordinal"] == before and response.data["content"] == text
    chunk = Chunk.objects.get(pk=response.data["id"])
    assert chunk.embedding is not None and np.linalg.norm(np.array(chunk.embedding)) > 0.5
    assert "以旧换新" in chunk.enriched and "以旧换新" in chunk.tokens and chunk.metadata == {"manual": True}
    assert KnowledgeBase.objects.get(pk=kb.pk).version > version
    ready_doc.refresh_from_db()
    assert ready_doc.chunks_total == before + 1 == ready_doc.chunks_done
    for mode in ("keyword", "vector"):
        results = client.post("/api/search/", {"query": "以旧换新补贴", "kb_ids": [kb.pk], "mode": mode}, format="json").data["results"]
        assert results and results[0]["chunk_id"] == chunk.pk, (mode, results[:1])


@pytest.mark.parametrize("body, status, code", [
    ({"content": "   "}, 400, "empty_chunk"),
    ({"content": "x", "enabled": False}, 400, "unknown_field"),
    ({"content": "x", "section_path": "a"}, 400, "invalid"),
    ({}, 400, "invalid"),
])
def test_bad_chunk_additions_are_4xx(client_for, alice, kb, ready_doc, body, status, code):
    response = client_for(alice).post(kb_url(kb, "chunks/"), {"document": ready_doc.pk, **body} if body else body, format="json")
    assert response.status_code == status and error_of(response)["code"] == code
    assert not Chunk.objects.filter(metadata__manual=True).exists()


def test_a_chunk_is_added_only_to_a_ready_document_of_this_kb(client_for, alice, kb, make_kb, ingest):
    client = client_for(alice)
    pending = Document.objects.create(kb=kb, source_name="p.md", doc_type="markdown", sha256="d" * 64, status="pending")
    response = client.post(kb_url(kb, "chunks/"), {"document": pending.pk, "content": "内容"}, format="json")
    assert response.status_code == 409 and error_of(response)["code"] == "document_not_ready"
    (elsewhere,) = ingest(make_kb(alice, "other"), {"o.md": GUIDE})
    response = client.post(kb_url(kb, "chunks/"), {"document": elsewhere.pk, "content": "内容"}, format="json")
    assert response.status_code == 404 and error_of(response)["code"] == "document_not_found"


def test_a_viewer_cannot_add_a_chunk(client_for, alice, kb, ready_doc, make_user):
    carol = make_user("carol")
    membership_set(kb=kb, role=Role.VIEWER, user=carol)
    response = client_for(carol).post(kb_url(kb, "chunks/"), {"document": ready_doc.pk, "content": "内容"}, format="json")
    assert response.status_code == 403 and error_of(response)["code"] == "role_required"


# --- failures in the reader's language ---------------------------------------------------------------

def test_a_failed_documents_message_follows_the_readers_language(client_for, alice, kb, ingest):
    (document,) = ingest(kb, {"broken.docx": CORRUPT_DOCX})
    assert document.error_code == "corrupt_file"
    client = client_for(alice)
    url = kb_url(kb, f"documents/{document.pk}/")
    chinese = client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").data["error"]
    english = client.get(url, HTTP_ACCEPT_LANGUAGE="en").data["error"]
    assert chinese["code"] == english["code"] == "corrupt_file"
    assert chinese["message"] == "文件已损坏或无法读取。"
    assert english["message"] == "The file is damaged or cannot be read."
    assert chinese["detail"] == english["detail"] == document.error_message


def test_an_unknown_error_code_shows_the_stored_message(client_for, alice, kb):
    document = Document.objects.create(kb=kb, source_name="x.md", doc_type="markdown", sha256="e" * 64, status="failed",
                                       error_code="legacy_code", error_message="something old")
    error = client_for(alice).get(kb_url(kb, f"documents/{document.pk}/")).data["error"]
    assert (error["code"], error["message"], error["detail"]) == ("legacy_code", "something old", "something old")


def test_the_admin_shows_a_failure_in_the_viewers_language(client, kb, ingest, make_user):
    (document,) = ingest(kb, {"broken.docx": CORRUPT_DOCX})
    client.force_login(make_user("root", superuser=True))
    chinese = client.get("/admin/knowledge/document/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    english = client.get("/admin/knowledge/document/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "corrupt_file: 文件已损坏或无法读取。" in chinese
    assert "corrupt_file: The file is damaged or cannot be read." in english
    page = client.get(f"/admin/knowledge/document/{document.pk}/change/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "分段长度" in page and "分段重叠" in page
