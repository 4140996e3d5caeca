"""A document keeps one id for its whole life (issue 38): versions under it, restore, old ids redirecting, the
data migration of chains made the old way. Real database, real embedder, real ingestion (run on commit)."""
from __future__ import annotations

import importlib

import pytest
from django.apps import apps as django_apps
from django.core.files.uploadedfile import SimpleUploadedFile

from audit.models import AuditEntry
from core.audit import Action
from knowledge.models import Chunk, Document, DocumentAlias, DocumentVersion

pytestmark = pytest.mark.django_db

V1 = "# 退货政策\n\n七天无理由退货，商品需保持完好，包装齐全。退货运费由买家承担。\n"
V2 = "# 退货政策\n\n十五天无理由退货，拆封商品也可以退回，运费由卖家承担。\n"


def upload(client, kb, name: str, text: str):
    response = client.post(f"/api/kbs/{kb.pk}/documents/", {"files": [SimpleUploadedFile(name, text.encode())]},
                           format="multipart")
    assert response.status_code == 202, response.data
    return response.data["documents"][0]


def search_texts(client, kb, query: str) -> str:
    response = client.post("/api/search/", {"query": query, "kb_ids": [kb.pk]}, format="json")
    assert response.status_code == 200, response.data
    return " ".join(r["content"] for r in response.data["results"])


def test_upload_v1_v2_restore_v1_keeps_one_id_lists_versions_and_serves_v1_again(
        client_for, alice, kb, django_capture_on_commit_callbacks):
    client = client_for(alice)
    with django_capture_on_commit_callbacks(execute=True):
        first = upload(client, kb, "policy.md", V1)
    doc_id = first["document"]
    assert first["id"] == doc_id and first["version"] == 1
    with django_capture_on_commit_callbacks(execute=True):
        second = upload(client, kb, "policy.md", V2)
    assert second["document"] == doc_id and second["version"] == 2 and second["id"] != doc_id
    detail = client.get(f"/api/kbs/{kb.pk}/documents/{doc_id}/").data
    assert (detail["id"], detail["version"], detail["status"]) == (doc_id, 2, "ready")
    assert "十五天" in search_texts(client, kb, "十五天无理由退货")
    # The row v2 was ingested on is gone; its id answers 308 to the document, in the API and on the page.
    moved = client.get(f"/api/kbs/{kb.pk}/documents/{second['id']}/")
    assert moved.status_code == 308 and moved["Location"] == f"/api/kbs/{kb.pk}/documents/{doc_id}/"

    versions = client.get(f"/api/kbs/{kb.pk}/documents/{doc_id}/versions/").data
    assert versions["count"] == 2
    rows = versions["results"]
    assert [r["number"] for r in rows] == [2, 1] and [r["current"] for r in rows] == [True, False]
    assert rows[1]["has_file"] and rows[1]["replaced_by"] == alice.username and rows[0]["uploaded_by"] == alice.username
    assert rows[1]["chunk_count"] >= 1

    with django_capture_on_commit_callbacks(execute=True):
        restored = client.post(f"/api/kbs/{kb.pk}/documents/{doc_id}/versions/1/restore/")
    assert restored.status_code == 202, restored.data
    assert restored.data["document"] == doc_id and restored.data["version"] == 3
    document = Document.objects.get(pk=doc_id)
    assert document.version == 3 and document.status == "ready"
    assert set(Chunk.objects.filter(kb=kb).values_list("document_id", flat=True)) == {doc_id}
    texts = search_texts(client, kb, "七天无理由退货")
    assert "七天" in texts and "十五天" not in texts
    assert "十五天" not in " ".join(Chunk.objects.filter(kb=kb).values_list("content", flat=True))
    rows = client.get(f"/api/kbs/{kb.pk}/documents/{doc_id}/versions/").data["results"]
    assert [(r["number"], r["restored_from"], r["current"]) for r in rows] == [(3, 1, True), (2, None, False), (1, None, False)]
    entry = AuditEntry.objects.get(action=Action.DOCUMENT_VERSION_RESTORE)
    assert entry.object_id == str(doc_id) and entry.changes["restored"] == 1

    page = client_for(alice)
    page.force_login(alice)
    response = page.get(f"/kbs/{kb.pk}/documents/{second['id']}/")
    assert response.status_code == 301 and response["Location"] == f"/kbs/{kb.pk}/documents/{doc_id}/"


def test_restore_refusals_have_codes(client_for, alice, bob, kb, ingest, settings, django_capture_on_commit_callbacks):
    from knowledge.services.kbs import membership_set

    settings.ZHIKU_DOCUMENT_VERSIONS_KEPT = 2
    (doc,) = ingest(kb, {"p.md": V1})
    for text in (V2, V1 + "\n补充。\n"):
        ingest(kb, {"p.md": text})
    client = client_for(alice)
    url = f"/api/kbs/{kb.pk}/documents/{doc.pk}/versions/"
    assert [r["has_file"] for r in client.get(url).data["results"]] == [True, True, False]  # v1's file pruned
    assert client.post(url + "1/restore/").data["error"]["code"] == "version_file_pruned"
    assert client.post(url + "1/restore/").status_code == 409
    assert client.post(url + "3/restore/").data["error"]["code"] == "version_current"
    response = client.post(url + "9/restore/")
    assert response.status_code == 404 and response.data["error"]["code"] == "version_not_found"
    membership_set(kb=kb, user=bob, role="viewer")
    assert client_for(bob).post(url + "2/restore/").status_code == 403
    assert client_for(bob).get(url).status_code == 200
    assert DocumentVersion.objects.filter(document=doc).count() == 3


def test_the_data_migration_folds_a_chain_made_the_old_way(kb, alice, ingest, client_for):
    from core.audit import record

    # The old way: v1 (row A) replaced by v2 (row B), which deleted A; only the audit log remembers A.
    (a,) = ingest(kb, {"old.md": V1})
    DocumentVersion.objects.filter(document=a).delete()
    record(Action.DOCUMENT_UPLOAD, actor=alice, obj=a, changes={"source_name": "old.md", "version": 1, "size": 10, "sha256": "aa"})
    b = Document.objects.create(kb=kb, source_name="old.md", doc_type="markdown", size=20, sha256="bb", version=2,
                                status="pending", uploaded_by=alice)
    record(Action.DOCUMENT_REPLACE, actor=alice, obj=b, changes={"source_name": "old.md", "version": 2, "replaces": a.pk})
    Chunk.objects.filter(document=a).update(document=b)
    a_id = a.pk
    a.delete()
    Document.objects.filter(pk=b.pk).update(status="ready")

    migration = importlib.import_module("knowledge.migrations.0019_document_history")
    migration.fold_chains(django_apps, None)
    migration.fold_chains(django_apps, None)  # twice: nothing doubled
    assert DocumentAlias.objects.get(old_id=a_id).document_id == b.pk
    versions = list(DocumentVersion.objects.filter(document=b).order_by("number"))
    assert [(v.number, bool(v.file), v.replaced_at is not None) for v in versions] == [(1, False, True), (2, False, False)]
    assert versions[1].chunk_count == Chunk.objects.filter(document=b).count() > 0
    response = client_for(alice).get(f"/api/kbs/{kb.pk}/documents/{a_id}/")
    assert response.status_code == 308 and response["Location"].endswith(f"/documents/{b.pk}/")


def test_an_old_id_redirects_only_a_reader_of_the_document_it_moved_to(client_for, alice, make_user, kb,
                                                                       django_capture_on_commit_callbacks):
    """Issue 45: the page redirected a viewer outside the document's group to it (the API answered 404)."""
    from django.contrib.auth.models import Group
    from django.test import Client

    from knowledge.models import Membership, Role

    with django_capture_on_commit_callbacks(execute=True):
        doc_id = upload(client_for(alice), kb, "salary.md", V1)["document"]
    with django_capture_on_commit_callbacks(execute=True):
        old_id = upload(client_for(alice), kb, "salary.md", V2)["id"]
    hr = Group.objects.create(name="hr")
    Document.objects.get(pk=doc_id).restricted_to_groups.set([hr])
    outsider, insider = make_user("olga"), make_user("ivan", groups=[hr])
    for user in (outsider, insider):
        Membership.objects.create(kb=kb, user=user, role=Role.VIEWER)
    for user, page, api in ((outsider, 404, 404), (insider, 301, 308)):
        browser = Client()
        browser.force_login(user)
        answer = browser.get(f"/kbs/{kb.pk}/documents/{old_id}/")
        assert answer.status_code == page, (user.username, answer.status_code)
        assert client_for(user).get(f"/api/kbs/{kb.pk}/documents/{old_id}/").status_code == api
    assert answer["Location"] == f"/kbs/{kb.pk}/documents/{doc_id}/"
