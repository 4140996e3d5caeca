"""The REST API against the real database and embedder: auth, KBs, roles, uploads, documents, chunks, errors."""
from __future__ import annotations

import io

import numpy as np
import pytest
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction

from accounts.models import ApiToken
from knowledge.models import Chunk, Document, KnowledgeBase, Membership, Role
from knowledge.services.kbs import membership_set

pytestmark = pytest.mark.django_db

GUIDE = (
    "# 退货政策\n\n七天无理由退货，商品需保持完好，包装齐全。退货运费由买家承担。\n\n"
    "## 运费\n\n满99元包邮，偏远地区（新疆、西藏）除外，需另付运费二十元。\n\n"
    "## 发票\n\n电子发票在确认收货后自动开具，可在订单详情页下载。\n"
)
GUIDE_V2 = GUIDE.replace("七天", "十五天")
HR = "# 薪资制度\n\n工资每月十日发放，年终奖根据绩效评定。\n"


def docx_bytes(*paragraphs: str) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("产品手册", level=1)
    for p in paragraphs:
        document.add_paragraph(p)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


CORRUPT_DOCX = b"PK\x03\x04garbage"


def kb_url(kb, rest: str = "") -> str:
    return f"/api/kbs/{kb.pk}/{rest}"


def upload(client, kb, files: dict, **fields):
    payload = {
        "files": [SimpleUploadedFile(name, data.encode() if isinstance(data, str) else data) for name, data in files.items()],
        **fields,
    }
    return client.post(kb_url(kb, "documents/"), payload, format="multipart")


def error_of(response) -> dict:
    assert "error" in response.data, response.data
    assert set(response.data["error"]) >= {"code", "message"}
    return response.data["error"]


@pytest.fixture
def people(make_user, alice, kb):
    """Alice owns ``kb``; bob edits, carol views, erin views via a group, gina edits via a group; dave is a stranger."""
    viewers = Group.objects.create(name="readers")
    editors = Group.objects.create(name="writers")
    bob, carol, dave = make_user("bob"), make_user("carol"), make_user("dave")
    erin, gina = make_user("erin", groups=[viewers]), make_user("gina", groups=[editors])
    root = make_user("root", superuser=True)
    membership_set(kb=kb, role=Role.EDITOR, user=bob)
    membership_set(kb=kb, role=Role.VIEWER, user=carol)
    membership_set(kb=kb, role=Role.VIEWER, group=viewers)
    membership_set(kb=kb, role=Role.EDITOR, group=editors)
    make_user("frank")
    return {"owner": alice, "editor": bob, "viewer": carol, "group_viewer": erin, "group_editor": gina,
            "superuser": root, "stranger": dave}


@pytest.fixture
def ready_doc(kb, ingest, alice):
    (document,) = ingest(kb, {"guide.md": GUIDE}, user=alice)
    assert document.status == "ready", document.error_message
    return document


@pytest.fixture
def failed_doc(kb, ingest, alice):
    (document,) = ingest(kb, {"broken.docx": CORRUPT_DOCX}, user=alice)
    assert document.status == "failed"
    return document


# --- auth ---------------------------------------------------------------------

def test_token_endpoint_issues_a_token_of_the_users(api_client, alice):
    response = api_client.post("/api/auth/token/", {"username": "alice", "password": "pw-alice"}, format="json")
    assert response.status_code == 200
    assert set(response.data) == {"token", "id", "expiry", "name", "key_prefix"}
    assert ApiToken.objects.get(pk=response.data["id"]).user == alice


def test_token_endpoint_rejects_a_wrong_password(api_client, alice):
    response = api_client.post("/api/auth/token/", {"username": "alice", "password": "nope"}, format="json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_credentials"


def test_token_endpoint_reports_missing_fields(api_client, db):
    response = api_client.post("/api/auth/token/", {"username": "alice"}, format="json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid"
    assert "password" in response.data["error"]["fields"]


def test_token_works_for_later_requests(api_client, alice):
    token = api_client.post("/api/auth/token/", {"username": "alice", "password": "pw-alice"}, format="json").data["token"]
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert api_client.get("/api/kbs/").status_code == 200


def test_token_endpoint_is_throttled_with_error_shape(api_client, alice):
    for _ in range(30):
        api_client.post("/api/auth/token/", {"username": "alice", "password": "guess"}, format="json")
    response = api_client.post("/api/auth/token/", {"username": "alice", "password": "pw-alice"}, format="json")
    assert response.status_code == 429
    assert error_of(response)["code"] == "throttled"
    assert "Retry-After" in response


def test_unauthenticated_request_gets_401_with_error_shape(api_client, kb):
    response = api_client.get(kb_url(kb))
    assert response.status_code == 401
    assert error_of(response)["code"] == "not_authenticated"
    assert response["WWW-Authenticate"].startswith("Token")


def test_bad_token_gets_401_authentication_failed(api_client, db):
    api_client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    response = api_client.get("/api/kbs/")
    assert response.status_code == 401
    assert error_of(response)["code"] == "authentication_failed"


def test_session_login_works_for_the_browser(client, alice):
    client.force_login(alice)
    assert client.get("/api/kbs/").status_code == 200


# --- knowledge bases ------------------------------------------------------------

def test_create_kb_makes_the_caller_owner_with_settings(client_for, alice):
    response = client_for(alice).post("/api/kbs/", {
        "name": "产品手册", "description": "售后", "top_k": 8, "fusion": "rrf", "rrf_k": 30,
        "user_words": ["无理由退货"], "synonyms": [["价格", "售价"]], "score_threshold": 0.3,
    }, format="json")
    assert response.status_code == 201, response.data
    body = response.data
    assert body["role"] == "owner" and body["owner"] == "alice"
    assert (body["top_k"], body["fusion"], body["rrf_k"], body["score_threshold"]) == (8, "rrf", 30, 0.3)
    assert body["document_count"] == 0 and body["chunk_count"] == 0
    assert KnowledgeBase.objects.get(pk=body["id"]).owner == alice


def test_create_kb_rejects_unknown_fields(client_for, alice):
    response = client_for(alice).post("/api/kbs/", {"name": "x", "colour": "red"}, format="json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "unknown_field"


def test_create_kb_rejects_wrong_types(client_for, alice):
    response = client_for(alice).post("/api/kbs/", {"name": "x", "top_k": "many", "rerank_enabled": "perhaps"}, format="json")
    assert response.status_code == 400
    fields = error_of(response)["fields"]
    assert "top_k" in fields and "rerank_enabled" in fields


@pytest.mark.parametrize("values", [
    {"top_k": 0}, {"top_k": 101}, {"score_threshold": 1.5}, {"vector_weight": -1}, {"vector_weight": "NaN"},
    {"synonyms": [["单独"]]}, {"user_words": [""]}, {"user_words": "jieba"}, {"fusion": "sum"}, {"name": ""},
    {"name": "x" * 201}, {"rrf_k": 10**9},
])
def test_create_kb_rejects_out_of_range_settings(client_for, alice, values):
    response = client_for(alice).post("/api/kbs/", {"name": "x", **values}, format="json")
    assert response.status_code == 400, response.data
    error_of(response)


def test_create_kb_with_an_unknown_embedding_model_is_400(client_for, alice):
    response = client_for(alice).post("/api/kbs/", {"name": "x", "embedding_model": "no-such-model"}, format="json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "unknown_embedding_model"


def test_create_kb_with_a_taken_name_is_409(client_for, alice, kb):
    response = client_for(alice).post("/api/kbs/", {"name": kb.name}, format="json")
    assert response.status_code == 409
    assert error_of(response)["code"] == "kb_name_taken"


def test_malformed_json_is_400_parse_error(client_for, alice):
    response = client_for(alice).post("/api/kbs/", data='{"name": ', content_type="application/json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "parse_error"


def test_json_array_body_is_400_not_500(client_for, alice):
    response = client_for(alice).post("/api/kbs/", data="[1, 2]", content_type="application/json")
    assert response.status_code == 400
    error_of(response)


def test_kb_list_shows_only_readable_kbs_with_role_and_counts(client_for, people, kb, make_kb, ready_doc):
    make_kb(people["stranger"], "Dave KB")
    response = client_for(people["viewer"]).get("/api/kbs/")
    assert response.status_code == 200
    assert [r["name"] for r in response.data["results"]] == ["Alice KB"]
    row = response.data["results"][0]
    assert row["role"] == "viewer"
    assert row["document_count"] == 1 and row["chunk_count"] == ready_doc.chunks.count() > 0


def test_counts_hold_only_the_documents_the_caller_may_read(client_for, people, kb, ready_doc, ingest, alice):
    """Issue 8: a viewer outside a document's groups learned it existed from the KB's counts."""
    (secret,) = ingest(kb, {"salaries.md": "# 薪资\n\n研发部薪资区间见附表。\n"}, user=alice)
    secret.restricted_to_groups.set([Group.objects.create(name="hr")])
    visible = (1, ready_doc.chunks.count())
    everything = (2, ready_doc.chunks.count() + secret.chunks.count())
    for who, expected in (("viewer", visible), ("group_viewer", visible), ("editor", everything),
                          ("group_editor", everything), ("owner", everything), ("superuser", everything)):
        row = client_for(people[who]).get(f"/api/kbs/{kb.pk}/").json()
        assert (row["document_count"], row["chunk_count"]) == expected, who
        listed = next(r for r in client_for(people[who]).get("/api/kbs/").json()["results"] if r["id"] == kb.pk)
        assert (listed["document_count"], listed["chunk_count"]) == expected, who


def test_kb_list_shows_role_held_through_a_group(client_for, people, kb):
    response = client_for(people["group_editor"]).get("/api/kbs/")
    assert [(r["name"], r["role"]) for r in response.data["results"]] == [("Alice KB", "editor")]


def test_superuser_lists_every_kb_as_owner(client_for, people, make_kb):
    make_kb(people["stranger"], "Dave KB")
    response = client_for(people["superuser"]).get("/api/kbs/")
    assert {r["name"]: r["role"] for r in response.data["results"]} == {"Alice KB": "owner", "Dave KB": "owner"}


def test_kb_list_is_paginated(client_for, alice, make_kb):
    for i in range(23):
        make_kb(alice, f"kb {i:02d}")
    response = client_for(alice).get("/api/kbs/")
    assert response.data["count"] == 23
    assert len(response.data["results"]) == 20
    assert response.data["next"] and response.data["previous"] is None
    page2 = client_for(alice).get("/api/kbs/", {"page": 2})
    assert len(page2.data["results"]) == 3


def test_kb_list_page_out_of_range_is_404(client_for, alice, kb):
    response = client_for(alice).get("/api/kbs/", {"page": 9})
    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


def test_kb_list_query_count_does_not_grow_with_kbs(client_for, alice, make_kb, django_assert_max_num_queries):
    for i in range(15):
        make_kb(alice, f"kb {i}")
    client = client_for(alice)
    with django_assert_max_num_queries(5):
        assert client.get("/api/kbs/").status_code == 200


def test_owner_patches_settings_and_the_version_is_bumped(client_for, alice, kb):
    response = client_for(alice).patch(kb_url(kb), {"top_k": 7, "name": "改名"}, format="json")
    assert response.status_code == 200, response.data
    assert response.data["top_k"] == 7 and response.data["name"] == "改名"
    assert response.data["version"] > kb.version


def test_patch_cannot_change_the_embedding_model(client_for, alice, kb):
    response = client_for(alice).patch(kb_url(kb), {"embedding_model": "st:other"}, format="json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "unknown_field"


def test_empty_patch_is_400(client_for, alice, kb):
    response = client_for(alice).patch(kb_url(kb), {}, format="json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "nothing_to_update"


def test_put_requires_the_name(client_for, alice, kb):
    response = client_for(alice).put(kb_url(kb), {"top_k": 4}, format="json")
    assert response.status_code == 400
    assert "name" in error_of(response)["fields"]


def test_put_with_name_updates(client_for, alice, kb):
    response = client_for(alice).put(kb_url(kb), {"name": "新名字", "top_k": 4}, format="json")
    assert response.status_code == 200
    assert (response.data["name"], response.data["top_k"]) == ("新名字", 4)


def test_owner_deletes_kb_and_it_is_gone(client_for, alice, kb, ready_doc):
    client = client_for(alice)
    assert client.delete(kb_url(kb)).status_code == 204
    assert client.get(kb_url(kb)).status_code == 404
    assert not Chunk.objects.filter(kb_id=kb.pk).exists()


def test_method_not_allowed_has_error_shape(client_for, alice, kb):
    response = client_for(alice).post(kb_url(kb), {}, format="json")
    assert response.status_code == 405
    assert error_of(response)["code"] == "method_not_allowed"


# --- roles on every endpoint ---------------------------------------------------

ROLE_ORDER = ["viewer", "editor", "owner"]
# (name, method, path template, body, least role, status on success)
ENDPOINTS = [
    ("kb_get", "get", "", None, "viewer", 200),
    ("kb_patch", "patch", "", {"top_k": 6}, "owner", 200),
    ("kb_put", "put", "", {"name": "renamed"}, "owner", 200),
    ("kb_delete", "delete", "", None, "owner", 204),
    ("members_list", "get", "members/", None, "owner", 200),
    ("members_add", "post", "members/", {"username": "frank", "role": "viewer"}, "owner", 201),
    ("member_patch", "patch", "members/{membership}/", {"role": "editor"}, "owner", 200),
    ("member_delete", "delete", "members/{membership}/", None, "owner", 204),
    ("documents_list", "get", "documents/", None, "viewer", 200),
    ("documents_upload", "upload", "documents/", None, "editor", 202),
    ("document_get", "get", "documents/{document}/", None, "viewer", 200),
    ("document_delete", "delete", "documents/{document}/", None, "editor", 204),
    ("document_retry", "post", "documents/{failed}/retry/", None, "editor", 202),
    ("document_reindex", "post", "documents/{document}/reindex/", None, "editor", 202),
    ("chunks_list", "get", "chunks/", None, "viewer", 200),
    ("chunk_get", "get", "chunks/{chunk}/", None, "viewer", 200),
    ("chunk_patch", "patch", "chunks/{chunk}/", {"enabled": False}, "editor", 200),
]
CALLERS = {  # who -> effective role (None: no access)
    "owner": "owner", "superuser": "owner", "editor": "editor", "group_editor": "editor",
    "viewer": "viewer", "group_viewer": "viewer", "stranger": None,
}


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=[e[0] for e in ENDPOINTS])
def test_every_endpoint_enforces_roles(client_for, people, kb, ready_doc, failed_doc, endpoint):
    """Each caller in turn on the same rows, each request rolled back after it (a savepoint), so a delete or a role
    change by one caller leaves the next the same state (one set-up per endpoint, not per caller)."""
    name, method, template, body, least, ok_status = endpoint
    ids = {
        "membership": Membership.objects.get(kb=kb, user=people["viewer"]).pk,
        "document": ready_doc.pk, "failed": failed_doc.pk, "chunk": ready_doc.chunks.first().pk,
    }
    url = kb_url(kb, template.format(**ids))
    for who, role in CALLERS.items():
        client = client_for(people[who])
        with transaction.atomic():
            if method == "upload":
                response = upload(client, kb, {"new.md": "# 新文档\n\n内容。"})
            else:
                call = getattr(client, method)
                response = call(url, body, format="json") if body is not None else call(url)
            transaction.set_rollback(True)
        seen = (who, response.status_code, getattr(response, "data", None))
        if role is None:
            assert response.status_code == 404 and error_of(response)["code"] == "kb_not_found", seen
        elif ROLE_ORDER.index(role) < ROLE_ORDER.index(least):
            assert response.status_code == 403 and error_of(response)["code"] == "role_required", seen
        else:
            assert response.status_code == ok_status, seen


def test_stranger_gets_404_not_403_and_no_content(client_for, people, kb, ready_doc):
    client = client_for(people["stranger"])
    for path in ("", "documents/", f"documents/{ready_doc.pk}/", "chunks/", "members/"):
        response = client.get(kb_url(kb, path))
        assert response.status_code == 404
        assert "guide" not in str(response.data)


def test_missing_kb_and_existing_unreadable_kb_look_the_same(client_for, people, kb):
    client = client_for(people["stranger"])
    hidden = client.get(kb_url(kb))
    missing = client.get("/api/kbs/987654/")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.data == missing.data


@pytest.mark.parametrize("path", ["/api/kbs/abc/", "/api/kbs/1.5/chunks/", "/api/kbs/-1/", "/api/kbs/99999999999999999999999/"])
def test_malformed_or_huge_ids_are_404_not_500(client_for, alice, kb, path):
    assert client_for(alice).get(path).status_code == 404


# --- members --------------------------------------------------------------------

def test_owner_lists_members(client_for, people, kb):
    response = client_for(people["owner"]).get(kb_url(kb, "members/"))
    rows = {(r["user"], r["group"], r["role"]) for r in response.data["results"]}
    assert ("bob", None, "editor") in rows and (None, "readers", "viewer") in rows
    assert response.data["count"] == 4


def test_owner_adds_a_user_member_who_can_then_read(client_for, alice, kb, make_user):
    make_user("hank")
    response = client_for(alice).post(kb_url(kb, "members/"), {"username": "hank", "role": "viewer"}, format="json")
    assert response.status_code == 201
    assert response.data["user"] == "hank" and response.data["role"] == "viewer"
    from django.contrib.auth import get_user_model

    assert client_for(get_user_model().objects.get(username="hank")).get(kb_url(kb)).status_code == 200


def test_owner_adds_a_group_member(client_for, alice, kb):
    Group.objects.create(name="support")
    response = client_for(alice).post(kb_url(kb, "members/"), {"group": "support", "role": "editor"}, format="json")
    assert response.status_code == 201
    assert (response.data["group"], response.data["user"], response.data["role"]) == ("support", None, "editor")


def test_adding_an_unknown_user_is_400_unknown_user(client_for, alice, kb):
    response = client_for(alice).post(kb_url(kb, "members/"), {"username": "ghost", "role": "viewer"}, format="json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "unknown_user"


def test_adding_an_unknown_group_is_400_unknown_group(client_for, alice, kb):
    response = client_for(alice).post(kb_url(kb, "members/"), {"group": "ghosts", "role": "viewer"}, format="json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "unknown_group"


def test_adding_both_user_and_group_is_400(client_for, people, kb):
    response = client_for(people["owner"]).post(
        kb_url(kb, "members/"), {"username": "frank", "group": "readers", "role": "viewer"}, format="json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "user_xor_group"


def test_adding_with_an_unknown_role_is_400(client_for, people, kb):
    response = client_for(people["owner"]).post(kb_url(kb, "members/"), {"username": "frank", "role": "king"}, format="json")
    assert response.status_code == 400
    assert "role" in error_of(response)["fields"]


def test_owner_changes_a_members_role(client_for, people, kb):
    membership = Membership.objects.get(kb=kb, user=people["viewer"])
    response = client_for(people["owner"]).patch(kb_url(kb, f"members/{membership.pk}/"), {"role": "editor"}, format="json")
    assert response.status_code == 200
    membership.refresh_from_db()
    assert membership.role == "editor"


def test_removed_member_loses_access(client_for, people, kb):
    membership = Membership.objects.get(kb=kb, user=people["viewer"])
    assert client_for(people["owner"]).delete(kb_url(kb, f"members/{membership.pk}/")).status_code == 204
    assert client_for(people["viewer"]).get(kb_url(kb)).status_code == 404


def test_membership_of_another_kb_is_404(client_for, people, kb, make_kb):
    other = make_kb(people["owner"], "other")
    membership = membership_set(kb=other, role="viewer", user=people["stranger"])
    response = client_for(people["owner"]).delete(kb_url(kb, f"members/{membership.pk}/"))
    assert response.status_code == 404
    assert error_of(response)["code"] == "membership_not_found"
    assert Membership.objects.filter(pk=membership.pk).exists()


# --- uploads and documents -------------------------------------------------------

def test_upload_returns_202_and_the_document_becomes_ready(client_for, alice, kb, django_capture_on_commit_callbacks):
    client = client_for(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client, kb, {"guide.md": GUIDE})
    assert response.status_code == 202, response.data
    (row,) = response.data["documents"]
    assert (row["source_name"], row["version"], row["unchanged"]) == ("guide.md", 1, False)
    assert row["status"] == "pending"
    detail = client.get(kb_url(kb, f"documents/{row['id']}/")).data
    assert detail["status"] == "ready"
    assert detail["progress"]["total"] > 0 and detail["progress"]["done"] == detail["progress"]["total"]
    assert detail["progress"]["ratio"] == 1.0
    assert detail["error"] is None


def test_upload_of_several_files_at_once(client_for, alice, kb, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client_for(alice), kb, {"a.md": GUIDE, "b.txt": "纯文本文件，用于测试多文件上传。"})
    assert response.status_code == 202
    assert sorted(d["source_name"] for d in response.data["documents"]) == ["a.md", "b.txt"]
    assert set(Document.objects.filter(kb=kb).values_list("status", flat=True)) == {"ready"}


def test_document_list_shows_fields_and_progress(client_for, alice, kb, ready_doc):
    response = client_for(alice).get(kb_url(kb, "documents/"))
    assert response.status_code == 200
    assert response.data["count"] == 1 and "next" in response.data
    (row,) = response.data["results"]
    assert set(row) >= {
        "id", "title", "source_name", "external_id", "doc_type", "size", "sha256", "status", "progress", "error",
        "version", "replaces", "metadata", "restricted_to_groups", "created_at", "updated_at",
    }
    assert row["doc_type"] == "markdown" and row["size"] == len(GUIDE.encode())
    assert row["progress"] == {"done": ready_doc.chunks_total, "total": ready_doc.chunks_total, "ratio": 1.0, "unit": "chunks"}


def test_document_list_filters_by_status(client_for, alice, kb, ready_doc, failed_doc):
    response = client_for(alice).get(kb_url(kb, "documents/"), {"status": "failed"})
    assert [r["id"] for r in response.data["results"]] == [failed_doc.pk]
    bad = client_for(alice).get(kb_url(kb, "documents/"), {"status": "weird"})
    assert bad.status_code == 400 and error_of(bad)["code"] == "invalid_filter"


def test_reuploading_the_same_content_is_unchanged(client_for, alice, kb, ready_doc, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client_for(alice), kb, {"guide.md": GUIDE})
    assert response.status_code == 202
    (row,) = response.data["documents"]
    assert row["unchanged"] is True and row["id"] == ready_doc.pk and row["version"] == 1
    assert Document.objects.filter(kb=kb).count() == 1


def test_reuploading_changed_content_replaces_the_old_version(client_for, alice, kb, ready_doc, django_capture_on_commit_callbacks):
    old_chunks = list(ready_doc.chunks.values_list("pk", flat=True))
    kb_version = KnowledgeBase.objects.get(pk=kb.pk).version
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client_for(alice), kb, {"guide.md": GUIDE_V2})
    (row,) = response.data["documents"]
    assert row["unchanged"] is False and row["version"] == 2 and row["document"] == ready_doc.pk
    new = Document.objects.get(pk=row["document"])  # the document keeps its id; the version's own row is gone
    assert new.status == "ready" and new.version == 2
    assert not Document.objects.filter(pk=row["id"]).exists()
    assert not Chunk.objects.filter(pk__in=old_chunks).exists()
    assert any("十五天" in c for c in new.chunks.values_list("content", flat=True))
    assert KnowledgeBase.objects.get(pk=kb.pk).version > kb_version


def test_unsupported_file_type_is_415(client_for, alice, kb):
    response = upload(client_for(alice), kb, {"virus.exe": b"MZ\x90\x00binary"})
    assert response.status_code == 415
    assert error_of(response)["code"] == "unsupported_type"
    assert not Document.objects.exists()


def test_empty_file_is_400_empty_file(client_for, alice, kb):
    response = upload(client_for(alice), kb, {"empty.md": b"   \n"})
    assert response.status_code == 400
    assert error_of(response)["code"] == "empty_file"


def test_file_over_the_cap_is_413(client_for, alice, kb, settings):
    settings.ZHIKU_MAX_UPLOAD_BYTES = 100
    response = upload(client_for(alice), kb, {"big.md": "大" * 200})
    assert response.status_code == 413
    assert error_of(response)["code"] == "file_too_large"
    assert not Document.objects.exists()


def test_one_bad_file_rejects_the_whole_upload(client_for, alice, kb):
    response = upload(client_for(alice), kb, {"ok.md": GUIDE, "bad.exe": b"MZ"})
    assert response.status_code == 415
    assert not Document.objects.exists()


def test_upload_with_a_long_chinese_file_name_is_stored(client_for, alice, kb, django_capture_on_commit_callbacks):
    # 120 CJK characters are 360 bytes: over the filesystem's 255-byte name limit.
    name = "产品说明" * 30 + ".md"
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client_for(alice), kb, {name: GUIDE})
    assert response.status_code == 202
    document = Document.objects.get(pk=response.data["documents"][0]["id"])
    assert document.source_name == name and document.status == "ready"


def test_upload_restricted_to_a_group_name_with_nul_is_400(client_for, alice, kb):
    response = upload(client_for(alice), kb, {"a.md": GUIDE}, restricted_to_groups="h\x00r")
    assert response.status_code == 400


def test_upload_without_files_is_400(client_for, alice, kb):
    response = client_for(alice).post(kb_url(kb, "documents/"), {}, format="multipart")
    assert response.status_code == 400
    assert error_of(response)["code"] == "no_files"


def test_upload_with_an_unknown_form_field_is_400(client_for, alice, kb):
    response = upload(client_for(alice), kb, {"a.md": GUIDE}, colour="red")
    assert response.status_code == 400
    assert error_of(response)["code"] == "unknown_field"


def test_upload_as_json_is_415_unsupported_media_type(client_for, alice, kb):
    response = client_for(alice).post(kb_url(kb, "documents/"), {"files": "x"}, format="json")
    assert response.status_code == 415
    assert error_of(response)["code"] == "unsupported_media_type"


def test_corrupt_docx_is_accepted_then_fails_with_an_error_and_no_chunks(client_for, alice, kb, django_capture_on_commit_callbacks):
    client = client_for(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client, kb, {"x.docx": CORRUPT_DOCX})
    assert response.status_code == 202
    detail = client.get(kb_url(kb, f"documents/{response.data['documents'][0]['id']}/")).data
    assert detail["status"] == "failed"
    assert detail["error"]["code"] == "corrupt_file" and detail["error"]["message"]
    assert not Chunk.objects.filter(document_id=detail["id"]).exists()


def test_failed_reupload_leaves_the_previous_version_serving(client_for, alice, kb, ingest, django_capture_on_commit_callbacks):
    (good,) = ingest(kb, {"manual.docx": docx_bytes("保修期为两年，人为损坏不在保修范围内。")})
    assert good.status == "ready"
    serving = set(good.chunks.values_list("pk", flat=True))
    client = client_for(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client, kb, {"manual.docx": CORRUPT_DOCX})
    (row,) = response.data["documents"]
    assert row["version"] == 2
    assert Document.objects.get(pk=row["id"]).status == "failed"
    chunks = client.get(kb_url(kb, "chunks/")).data["results"]
    assert {c["id"] for c in chunks} == serving
    assert all(c["document"] == good.pk for c in chunks)


def test_retry_requeues_a_failed_document_that_then_succeeds(client_for, alice, kb, failed_doc, django_capture_on_commit_callbacks):
    # A transient failure: the stored file is fine by the time of the retry.
    with failed_doc.file.open("wb") as fh:
        fh.write(docx_bytes("重试之后可以正常解析。"))
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(alice).post(kb_url(kb, f"documents/{failed_doc.pk}/retry/"))
    assert response.status_code == 202
    assert response.data["status"] == "pending" and response.data["error"] is None
    failed_doc.refresh_from_db()
    assert failed_doc.status == "ready" and failed_doc.chunks.exists()


def test_retry_of_a_ready_document_is_409(client_for, alice, kb, ready_doc):
    response = client_for(alice).post(kb_url(kb, f"documents/{ready_doc.pk}/retry/"))
    assert response.status_code == 409
    assert error_of(response)["code"] == "not_failed"


def test_reindex_creates_a_new_version_that_replaces_the_old(client_for, alice, kb, ready_doc, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(alice).post(kb_url(kb, f"documents/{ready_doc.pk}/reindex/"))
    assert response.status_code == 202
    assert response.data["version"] == 2 and response.data["replaces"] == ready_doc.pk == response.data["document"]
    ready_doc.refresh_from_db()
    assert ready_doc.status == "ready" and ready_doc.version == 2
    assert not Document.objects.filter(pk=response.data["id"]).exists()


def test_delete_document_removes_it_and_its_chunks(client_for, alice, kb, ready_doc):
    client = client_for(alice)
    assert client.delete(kb_url(kb, f"documents/{ready_doc.pk}/")).status_code == 204
    assert client.get(kb_url(kb, f"documents/{ready_doc.pk}/")).status_code == 404
    assert not Chunk.objects.filter(document_id=ready_doc.pk).exists()


def test_document_of_another_kb_is_404_through_this_kb(client_for, alice, kb, make_kb, ingest):
    other = make_kb(alice, "other")
    (doc,) = ingest(other, {"o.md": GUIDE})
    response = client_for(alice).get(kb_url(kb, f"documents/{doc.pk}/"))
    assert response.status_code == 404
    assert error_of(response)["code"] == "document_not_found"


def test_documents_list_query_count_is_bounded(client_for, alice, kb, ingest, django_assert_max_num_queries):
    hr = Group.objects.create(name="hr")
    docs = ingest(kb, {f"d{i}.md": f"# 文档{i}\n\n第{i}份文档的内容。" for i in range(6)})
    for d in docs[:3]:
        d.restricted_to_groups.add(hr)
    client = client_for(alice)
    with django_assert_max_num_queries(8):
        response = client.get(kb_url(kb, "documents/"))
    assert response.data["count"] == 6
    assert sum(1 for r in response.data["results"] if r["restricted_to_groups"] == ["hr"]) == 3


# --- group restrictions -----------------------------------------------------------

@pytest.fixture
def restricted(client_for, people, kb, ready_doc, django_capture_on_commit_callbacks):
    Group.objects.create(name="hr")
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client_for(people["editor"]), kb, {"salary.md": HR}, restricted_to_groups="hr")
    assert response.status_code == 202, response.data
    document = Document.objects.get(pk=response.data["documents"][0]["id"])
    assert document.status == "ready"
    return document


def test_restricted_document_is_404_for_a_viewer_outside_the_group(client_for, people, kb, restricted):
    response = client_for(people["viewer"]).get(kb_url(kb, f"documents/{restricted.pk}/"))
    assert response.status_code == 404


def test_restricted_document_is_absent_from_an_outsiders_lists(client_for, people, kb, restricted, ready_doc):
    client = client_for(people["viewer"])
    assert [r["id"] for r in client.get(kb_url(kb, "documents/")).data["results"]] == [ready_doc.pk]
    chunk_docs = {c["document"] for c in client.get(kb_url(kb, "chunks/")).data["results"]}
    assert chunk_docs == {ready_doc.pk}
    hidden_chunk = restricted.chunks.first()
    assert client.get(kb_url(kb, f"chunks/{hidden_chunk.pk}/")).status_code == 404


def test_restricted_document_is_visible_to_a_viewer_in_the_group(client_for, people, kb, restricted):
    carol = people["viewer"]
    carol.groups.add(Group.objects.get(name="hr"))
    client = client_for(carol)
    detail = client.get(kb_url(kb, f"documents/{restricted.pk}/"))
    assert detail.status_code == 200 and detail.data["restricted_to_groups"] == ["hr"]
    assert restricted.pk in {c["document"] for c in client.get(kb_url(kb, "chunks/")).data["results"]}


def test_restricted_document_is_visible_to_editors(client_for, people, kb, restricted):
    assert client_for(people["group_editor"]).get(kb_url(kb, f"documents/{restricted.pk}/")).status_code == 200


def test_upload_restricted_to_an_unknown_group_is_400(client_for, alice, kb):
    response = upload(client_for(alice), kb, {"a.md": GUIDE}, restricted_to_groups="nobody")
    assert response.status_code == 400
    assert error_of(response)["code"] == "unknown_group"
    assert not Document.objects.exists()


# --- chunks ----------------------------------------------------------------------------

def test_chunk_list_fields_never_include_the_embedding(client_for, alice, kb, ready_doc):
    response = client_for(alice).get(kb_url(kb, "chunks/"))
    assert response.status_code == 200
    assert response.data["count"] == ready_doc.chunks.count()
    row = response.data["results"][0]
    assert set(row) == {
        "id", "document", "document_title", "source_name", "ordinal", "chunk_type", "content", "section_path",
        "page_start", "page_end", "enabled", "metadata", "updated_at",
    }
    assert row["source_name"] == "guide.md" and row["document"] == ready_doc.pk


def test_chunk_list_includes_tokens_when_asked(client_for, alice, kb, ready_doc):
    row = client_for(alice).get(kb_url(kb, "chunks/"), {"include": "tokens"}).data["results"][0]
    assert isinstance(row["tokens"], list) and row["tokens"]
    assert "embedding" not in row


def test_chunk_list_is_paginated(client_for, alice, kb, ingest):
    body = "\n\n".join(f"## 第{i}节\n\n" + f"这是第{i}节的正文，讲述了一个完整的话题，足够长以形成单独的分段。" * 3 for i in range(30))
    ingest(kb, {"long.md": "# 长文档\n\n" + body})
    response = client_for(alice).get(kb_url(kb, "chunks/"), {"page_size": 5})
    assert response.data["count"] > 5 and len(response.data["results"]) == 5 and response.data["next"]


def test_chunk_filters(client_for, alice, kb, ready_doc, ingest):
    (other,) = ingest(kb, {"other.txt": "发票可以在订单详情页下载，也可以联系客服。"})
    client = client_for(alice)
    by_doc = client.get(kb_url(kb, "chunks/"), {"document": other.pk}).data["results"]
    assert by_doc and {c["document"] for c in by_doc} == {other.pk}
    by_text = client.get(kb_url(kb, "chunks/"), {"q": "包邮"}).data["results"]
    assert by_text and all("包邮" in c["content"] for c in by_text)
    types = {c["chunk_type"] for c in client.get(kb_url(kb, "chunks/")).data["results"]}
    some_type = sorted(types)[0]
    by_type = client.get(kb_url(kb, "chunks/"), {"type": some_type}).data["results"]
    assert by_type and {c["chunk_type"] for c in by_type} == {some_type}


@pytest.mark.parametrize("params", [{"enabled": "maybe"}, {"type": "poem"}, {"document": "abc"}, {"include": "vectors"}])
def test_invalid_chunk_filters_are_400(client_for, alice, kb, params):
    response = client_for(alice).get(kb_url(kb, "chunks/"), params)
    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_filter"


def test_chunk_patch_edits_content_and_re_embeds(client_for, alice, kb, ready_doc):
    chunk = ready_doc.chunks.order_by("ordinal").last()
    before = np.array(chunk.embedding)
    kb_version = KnowledgeBase.objects.get(pk=kb.pk).version
    response = client_for(alice).patch(kb_url(kb, f"chunks/{chunk.pk}/"), {"content": "全新的内容：支持三十天价格保护。"}, format="json")
    assert response.status_code == 200, response.data
    assert response.data["content"] == "全新的内容：支持三十天价格保护。"
    chunk.refresh_from_db()
    assert not np.allclose(np.array(chunk.embedding), before)
    assert "价格" in chunk.tokens
    assert KnowledgeBase.objects.get(pk=kb.pk).version > kb_version


def test_chunk_disable_and_filter_by_enabled(client_for, alice, kb, ready_doc):
    client = client_for(alice)
    chunk = ready_doc.chunks.first()
    response = client.patch(kb_url(kb, f"chunks/{chunk.pk}/"), {"enabled": False}, format="json")
    assert response.status_code == 200 and response.data["enabled"] is False
    disabled = client.get(kb_url(kb, "chunks/"), {"enabled": "false"}).data["results"]
    assert [c["id"] for c in disabled] == [chunk.pk]
    enabled = client.get(kb_url(kb, "chunks/"), {"enabled": "true"}).data["results"]
    assert chunk.pk not in {c["id"] for c in enabled} and enabled


def test_chunk_patch_with_empty_content_is_400(client_for, alice, kb, ready_doc):
    response = client_for(alice).patch(kb_url(kb, f"chunks/{ready_doc.chunks.first().pk}/"), {"content": "  "}, format="json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "empty_chunk"


@pytest.mark.parametrize("body", [{"embedding": [0.1]}, {"enabled": "sometimes"}, {}])
def test_chunk_patch_rejects_bad_bodies(client_for, alice, kb, ready_doc, body):
    response = client_for(alice).patch(kb_url(kb, f"chunks/{ready_doc.chunks.first().pk}/"), body, format="json")
    assert response.status_code == 400
    error_of(response)


def test_chunk_detail_and_tokens(client_for, alice, kb, ready_doc):
    chunk = ready_doc.chunks.first()
    client = client_for(alice)
    assert "tokens" not in client.get(kb_url(kb, f"chunks/{chunk.pk}/")).data
    assert client.get(kb_url(kb, f"chunks/{chunk.pk}/"), {"include": "tokens"}).data["tokens"] == chunk.tokens


def test_chunks_list_query_count_is_bounded(client_for, alice, kb, ingest, django_assert_max_num_queries):
    ingest(kb, {f"c{i}.md": f"# 章节{i}\n\n第{i}份文件的正文内容。" for i in range(8)})
    client = client_for(alice)
    with django_assert_max_num_queries(7):
        response = client.get(kb_url(kb, "chunks/"), {"include": "tokens"})
    assert response.data["count"] >= 8


# --- schema -------------------------------------------------------------------------------

def test_openapi_schema_renders(client_for, alice):
    response = client_for(alice).get("/api/schema/")
    assert response.status_code == 200
    assert b"/api/kbs/" in response.content and b"/api/kbs/{kb_id}/chunks/" in response.content


def test_malformed_api_path_is_a_json_404(client_for, alice):
    response = client_for(alice).get("/api/kbs/abc/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_non_staff_users_sign_in_on_the_site_login_page(client, make_user):
    make_user("li")
    page = client.get("/accounts/login/?next=/chat/")
    assert page.status_code == 200
    response = client.post("/accounts/login/", {"username": "li", "password": "pw-li", "next": "/chat/"})
    assert response.status_code == 302 and response["Location"] == "/chat/"
    assert client.get("/chat/").status_code == 200
