"""The admin (through the services, scoped by KB roles) and the home page, with Django's test client."""
from __future__ import annotations

import io

import numpy as np
import pytest
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge.models import Chunk, Document, KnowledgeBase, Membership, Role
from knowledge.services.kbs import membership_set

pytestmark = pytest.mark.django_db

GUIDE = "# 退货政策\n\n七天无理由退货，商品需保持完好。\n\n## 运费\n\n满99元包邮，偏远地区除外。\n"
CORRUPT_DOCX = b"PK\x03\x04garbage"


def docx_bytes(text: str) -> bytes:
    import docx

    document = docx.Document()
    document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def form_data(response) -> dict:
    """The POST data a browser would send back for an admin change form, from its current values."""
    data: dict = {}

    def add(form):
        for bound in form:
            if bound.field.disabled:
                continue
            value = bound.value()
            if value is None:
                continue
            if isinstance(value, bool):
                if value:
                    data[bound.html_name] = "on"
            elif isinstance(value, (list, tuple)):
                data[bound.html_name] = [str(v) for v in value]
            else:
                data[bound.html_name] = str(value)

    add(response.context["adminform"].form)
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        for name, value in formset.management_form.initial.items():
            data[f"{formset.prefix}-{name}"] = value
        for form in formset.forms:
            add(form)
    return data


@pytest.fixture
def root(make_user, client):
    user = make_user("root", superuser=True)
    return user


@pytest.fixture
def root_client(client, root):
    client.force_login(root)
    return client


@pytest.fixture
def make_staff(make_user):
    def make(username: str, **kwargs):
        user = make_user(username, **kwargs)
        user.is_staff = True
        user.save(update_fields=["is_staff"])
        return user

    return make


@pytest.fixture
def staff_client(client):
    def login(user):
        client.force_login(user)
        return client

    return login


@pytest.fixture
def ready_doc(kb, ingest):
    (document,) = ingest(kb, {"guide.md": GUIDE})
    assert document.status == "ready"
    return document


@pytest.fixture
def failed_doc(kb, ingest):
    (document,) = ingest(kb, {"broken.docx": CORRUPT_DOCX})
    assert document.status == "failed"
    return document


# --- superuser -------------------------------------------------------------------

@pytest.mark.parametrize("model", ["knowledgebase", "document", "chunk", "bm25index"])
def test_changelists_render_for_a_superuser(root_client, ready_doc, failed_doc, model):
    response = root_client.get(f"/admin/knowledge/{model}/")
    assert response.status_code == 200


def test_change_pages_render(root_client, kb, ready_doc):
    chunk = ready_doc.chunks.first()
    for url in (f"/admin/knowledge/knowledgebase/{kb.pk}/change/", f"/admin/knowledge/document/{ready_doc.pk}/change/",
                f"/admin/knowledge/chunk/{chunk.pk}/change/", "/admin/knowledge/knowledgebase/add/"):
        assert root_client.get(url).status_code == 200, url


def test_document_changelist_links_to_the_upload_page(root_client, kb):
    response = root_client.get("/admin/knowledge/document/")
    assert b"/admin/knowledge/document/upload/" in response.content


def test_document_list_shows_progress_and_error(root_client, ready_doc, failed_doc):
    content = root_client.get("/admin/knowledge/document/").content.decode()
    assert f"{ready_doc.chunks_total}/{ready_doc.chunks_total}" in content
    assert failed_doc.error_code in content


def test_add_document_redirects_to_upload(root_client):
    response = root_client.get("/admin/knowledge/document/add/")
    assert response.status_code == 302 and response["Location"].endswith("/admin/knowledge/document/upload/")


def test_upload_view_creates_an_ingested_document(root_client, kb, django_capture_on_commit_callbacks):
    assert root_client.get("/admin/knowledge/document/upload/").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        response = root_client.post("/admin/knowledge/document/upload/", {
            "kb": kb.pk, "files": [SimpleUploadedFile("guide.md", GUIDE.encode()), SimpleUploadedFile("b.txt", "第二个文件。".encode())],
        })
    assert response.status_code == 302
    docs = Document.objects.filter(kb=kb)
    assert sorted(docs.values_list("source_name", flat=True)) == ["b.txt", "guide.md"]
    assert set(docs.values_list("status", flat=True)) == {"ready"}
    assert Chunk.objects.filter(kb=kb).exists()


def test_upload_view_applies_group_restriction(root_client, kb, django_capture_on_commit_callbacks):
    hr = Group.objects.create(name="hr")
    with django_capture_on_commit_callbacks(execute=True):
        root_client.post("/admin/knowledge/document/upload/", {
            "kb": kb.pk, "files": [SimpleUploadedFile("salary.md", "# 薪资\n\n每月十日发放。".encode())], "restricted_to_groups": [hr.pk],
        })
    assert list(Document.objects.get(kb=kb).restricted_to_groups.all()) == [hr]


def test_upload_view_reports_an_unsupported_type(root_client, kb):
    response = root_client.post("/admin/knowledge/document/upload/", {
        "kb": kb.pk, "files": [SimpleUploadedFile("virus.exe", b"MZ\x90\x00")],
    })
    assert response.status_code == 415
    assert "unsupported_type" in response.content.decode()
    assert not Document.objects.exists()


def test_retry_action_requeues_a_failed_document(root_client, kb, failed_doc, django_capture_on_commit_callbacks):
    with failed_doc.file.open("wb") as fh:
        fh.write(docx_bytes("修复后的文件可以正常解析，内容完整。"))
    with django_capture_on_commit_callbacks(execute=True):
        response = root_client.post("/admin/knowledge/document/", {"action": "retry_documents", "_selected_action": [failed_doc.pk]})
    assert response.status_code == 302
    failed_doc.refresh_from_db()
    assert failed_doc.status == "ready" and failed_doc.error_code == ""


def test_retry_action_skips_a_ready_document(root_client, ready_doc):
    response = root_client.post("/admin/knowledge/document/",
                                {"action": "retry_documents", "_selected_action": [ready_doc.pk]}, follow=True)
    assert response.status_code == 200
    assert "只有失败或停滞的文档可以重试" in response.content.decode()  # the service's message, in the default language
    ready_doc.refresh_from_db()
    assert ready_doc.status == "ready"


def test_reindex_action_makes_a_new_version(root_client, kb, ready_doc, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        root_client.post("/admin/knowledge/document/", {"action": "reindex_documents", "_selected_action": [ready_doc.pk]})
    (current,) = Document.objects.filter(kb=kb)
    assert current.version == 2 and current.status == "ready"


def test_document_restriction_edit_bumps_the_kb_version(root_client, kb, ready_doc):
    hr = Group.objects.create(name="hr")
    url = f"/admin/knowledge/document/{ready_doc.pk}/change/"
    data = form_data(root_client.get(url))
    data["restricted_to_groups"] = [str(hr.pk)]
    version = KnowledgeBase.objects.get(pk=kb.pk).version
    response = root_client.post(url, data)
    assert response.status_code == 302
    assert list(ready_doc.restricted_to_groups.all()) == [hr]
    assert KnowledgeBase.objects.get(pk=kb.pk).version > version
    ready_doc.refresh_from_db()
    assert ready_doc.status == "ready"


def test_deleting_a_document_in_the_admin_uses_the_service(root_client, kb, ready_doc):
    version = KnowledgeBase.objects.get(pk=kb.pk).version
    response = root_client.post(f"/admin/knowledge/document/{ready_doc.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Document.objects.filter(pk=ready_doc.pk).exists()
    assert KnowledgeBase.objects.get(pk=kb.pk).version > version  # document_delete bumps; a raw delete would not


def test_chunk_edit_re_embeds_and_bumps_the_version(root_client, kb, ready_doc):
    chunk = ready_doc.chunks.order_by("ordinal").last()
    before = np.array(chunk.embedding)
    version = KnowledgeBase.objects.get(pk=kb.pk).version
    url = f"/admin/knowledge/chunk/{chunk.pk}/change/"
    data = form_data(root_client.get(url))
    data["content"] = "修改后的内容：支持三十天价格保护。"
    response = root_client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else response
    chunk.refresh_from_db()
    assert chunk.content == "修改后的内容：支持三十天价格保护。"
    assert chunk.enriched.endswith(chunk.content)
    assert not np.allclose(np.array(chunk.embedding), before)
    assert KnowledgeBase.objects.get(pk=kb.pk).version > version


def test_chunk_disable_action(root_client, kb, ready_doc):
    chunk = ready_doc.chunks.first()
    version = KnowledgeBase.objects.get(pk=kb.pk).version
    root_client.post("/admin/knowledge/chunk/", {"action": "disable_chunks", "_selected_action": [chunk.pk]})
    chunk.refresh_from_db()
    assert chunk.enabled is False
    assert KnowledgeBase.objects.get(pk=kb.pk).version > version


def test_chunk_search_and_filters(root_client, kb, ready_doc):
    response = root_client.get("/admin/knowledge/chunk/", {"q": "包邮", "enabled__exact": "1", "kb__id__exact": kb.pk})
    assert response.status_code == 200
    assert response.context["cl"].result_count >= 1


def test_kb_add_goes_through_kb_create(root_client, root):
    response = root_client.get("/admin/knowledge/knowledgebase/add/")
    data = form_data(response)
    data.update({"name": "新知识库", "top_k": "9", "synonyms": '[["价格", "售价"]]'})
    response = root_client.post("/admin/knowledge/knowledgebase/add/", data)
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else response
    kb = KnowledgeBase.objects.get(name="新知识库")
    assert kb.owner == root and kb.top_k == 9 and kb.synonyms == [["价格", "售价"]]
    assert kb.embedding_dim == 384


def test_kb_settings_change_bumps_the_version(root_client, kb):
    url = f"/admin/knowledge/knowledgebase/{kb.pk}/change/"
    data = form_data(root_client.get(url))
    data["top_k"] = "11"
    response = root_client.post(url, data)
    assert response.status_code == 302
    fresh = KnowledgeBase.objects.get(pk=kb.pk)
    assert fresh.top_k == 11 and fresh.version > kb.version


def test_kb_change_with_bad_synonyms_shows_a_form_error(root_client, kb):
    url = f"/admin/knowledge/knowledgebase/{kb.pk}/change/"
    data = form_data(root_client.get(url))
    data["synonyms"] = '[["孤单"]]'
    response = root_client.post(url, data)
    assert response.status_code == 200
    assert "synonyms" in response.context["adminform"].form.errors
    assert KnowledgeBase.objects.get(pk=kb.pk).synonyms == []


def test_kb_add_with_a_taken_name_shows_a_message_not_a_500(root_client, root, make_kb):
    make_kb(root, "重名")
    data = form_data(root_client.get("/admin/knowledge/knowledgebase/add/"))
    data["name"] = "重名"
    response = root_client.post("/admin/knowledge/knowledgebase/add/", data, follow=True)
    assert response.status_code == 200
    assert "kb_name_taken" in response.content.decode()
    assert KnowledgeBase.objects.filter(name="重名").count() == 1


def test_membership_inline_adds_a_member_through_the_service(root_client, kb, make_user):
    bob = make_user("bob")
    url = f"/admin/knowledge/knowledgebase/{kb.pk}/change/"
    data = form_data(root_client.get(url))
    prefix = "memberships"
    data.update({f"{prefix}-TOTAL_FORMS": "1", f"{prefix}-0-user": str(bob.pk), f"{prefix}-0-role": "editor",
                 f"{prefix}-0-kb": str(kb.pk)})
    response = root_client.post(url, data)
    assert response.status_code == 302, response.context["inline_admin_formsets"][0].formset.errors if response.context else response
    assert Membership.objects.get(kb=kb, user=bob).role == "editor"


def test_bm25_index_admin_is_read_only(root_client):
    response = root_client.get("/admin/knowledge/bm25index/add/")
    assert response.status_code == 403


# --- staff, non-superuser ---------------------------------------------------------------

def test_staff_sees_only_kbs_they_own(staff_client, make_staff, make_kb, alice):
    sam = make_staff("sam")
    mine = make_kb(sam, "Sam KB")
    theirs = make_kb(alice, "Alice secret KB")
    client = staff_client(sam)
    response = client.get("/admin/knowledge/knowledgebase/")
    assert response.status_code == 200
    names = [kb.name for kb in response.context["cl"].result_list]
    assert names == [mine.name]
    other = client.get(f"/admin/knowledge/knowledgebase/{theirs.pk}/change/")
    assert other.status_code in (302, 404)
    assert theirs.name not in other.content.decode()


def test_staff_sees_the_knowledge_app_on_the_admin_index(staff_client, make_staff):
    response = staff_client(make_staff("sam")).get("/admin/")
    assert response.status_code == 200
    assert "/admin/knowledge/knowledgebase/" in response.content.decode()


def test_staff_creates_a_kb_and_owns_it(staff_client, make_staff):
    sam = make_staff("sam")
    client = staff_client(sam)
    data = form_data(client.get("/admin/knowledge/knowledgebase/add/"))
    data["name"] = "Sam 的知识库"
    assert client.post("/admin/knowledge/knowledgebase/add/", data).status_code == 302
    kb = KnowledgeBase.objects.get(name="Sam 的知识库")
    assert kb.owner == sam
    assert [k.name for k in client.get("/admin/knowledge/knowledgebase/").context["cl"].result_list] == [kb.name]


def test_staff_cannot_see_documents_of_another_users_kb(staff_client, make_staff, ready_doc):
    client = staff_client(make_staff("sam"))
    response = client.get("/admin/knowledge/document/")
    assert response.status_code == 200 and response.context["cl"].result_count == 0
    assert client.get(f"/admin/knowledge/document/{ready_doc.pk}/change/").status_code in (302, 404)
    chunk = ready_doc.chunks.first()
    assert client.get(f"/admin/knowledge/chunk/{chunk.pk}/change/").status_code in (302, 404)
    assert "Alice KB" not in client.get("/admin/knowledge/chunk/").content.decode()


def test_staff_viewer_reads_documents_but_cannot_change_them(staff_client, make_staff, kb, ready_doc):
    sam = make_staff("sam")
    membership_set(kb=kb, role=Role.VIEWER, user=sam)
    client = staff_client(sam)
    assert client.get("/admin/knowledge/document/").context["cl"].result_count == 1
    chunk = ready_doc.chunks.first()
    url = f"/admin/knowledge/chunk/{chunk.pk}/change/"
    page = client.get(url)
    assert page.status_code == 200 and not page.context["has_change_permission"]
    response = client.post(url, {"content": "偷偷修改", "enabled": "on"})
    assert response.status_code == 403
    chunk.refresh_from_db()
    assert chunk.content != "偷偷修改"


def test_staff_viewer_cannot_upload(staff_client, make_staff, kb):
    sam = make_staff("sam")
    membership_set(kb=kb, role=Role.VIEWER, user=sam)
    assert staff_client(sam).get("/admin/knowledge/document/upload/").status_code == 403


def test_staff_editor_uploads_only_to_kbs_they_edit(staff_client, make_staff, make_kb, kb, alice, django_capture_on_commit_callbacks):
    sam = make_staff("sam")
    readonly = make_kb(alice, "read only")
    membership_set(kb=kb, role=Role.EDITOR, user=sam)
    membership_set(kb=readonly, role=Role.VIEWER, user=sam)
    client = staff_client(sam)
    form = client.get("/admin/knowledge/document/upload/").context["form"]
    assert list(form.fields["kb"].queryset) == [kb]
    refused = client.post("/admin/knowledge/document/upload/", {"kb": readonly.pk, "files": [SimpleUploadedFile("a.md", GUIDE.encode())]})
    assert refused.status_code == 400 and not Document.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        accepted = client.post("/admin/knowledge/document/upload/", {"kb": kb.pk, "files": [SimpleUploadedFile("a.md", GUIDE.encode())]})
    assert accepted.status_code == 302
    assert Document.objects.get(kb=kb).status == "ready"


def test_staff_cannot_bulk_delete_documents_of_a_kb_they_only_view(staff_client, make_staff, make_kb, kb, alice, ingest):
    sam = make_staff("sam")
    viewed = make_kb(alice, "viewed")
    membership_set(kb=kb, role=Role.EDITOR, user=sam)
    membership_set(kb=viewed, role=Role.VIEWER, user=sam)
    (mine,) = ingest(kb, {"a.md": GUIDE})
    (theirs,) = ingest(viewed, {"b.md": GUIDE})
    client = staff_client(sam)
    client.post("/admin/knowledge/document/", {"action": "delete_selected", "_selected_action": [mine.pk, theirs.pk], "post": "yes"})
    assert Document.objects.filter(pk=theirs.pk).exists()


def test_staff_editor_deletes_a_document_of_their_kb(staff_client, make_staff, kb, ready_doc):
    sam = make_staff("sam")
    membership_set(kb=kb, role=Role.EDITOR, user=sam)
    response = staff_client(sam).post(f"/admin/knowledge/document/{ready_doc.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Document.objects.filter(pk=ready_doc.pk).exists()


def test_staff_editor_edits_a_chunk_via_a_group_role(staff_client, make_staff, kb, ready_doc):
    writers = Group.objects.create(name="writers")
    sam = make_staff("sam", groups=[writers])
    membership_set(kb=kb, role=Role.EDITOR, group=writers)
    client = staff_client(sam)
    chunk = ready_doc.chunks.first()
    url = f"/admin/knowledge/chunk/{chunk.pk}/change/"
    data = form_data(client.get(url))
    data["content"] = "编辑组成员修改的内容。"
    assert client.post(url, data).status_code == 302
    chunk.refresh_from_db()
    assert chunk.content == "编辑组成员修改的内容。"


def test_staff_viewer_does_not_see_a_document_restricted_to_another_group(staff_client, make_staff, kb, ingest):
    hr = Group.objects.create(name="hr")
    (secret,) = ingest(kb, {"salary.md": "# 薪资\n\n每月十日发放。"})
    secret.restricted_to_groups.add(hr)
    sam = make_staff("sam")
    membership_set(kb=kb, role=Role.VIEWER, user=sam)
    client = staff_client(sam)
    assert client.get("/admin/knowledge/document/").context["cl"].result_count == 0
    assert client.get("/admin/knowledge/chunk/").context["cl"].result_count == 0
    sam.groups.add(hr)
    assert client.get("/admin/knowledge/document/").context["cl"].result_count == 1


def test_non_staff_user_cannot_enter_the_admin(client, alice, kb):
    client.force_login(alice)
    response = client.get("/admin/knowledge/knowledgebase/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


# --- home page ---------------------------------------------------------------------------

def test_home_page_for_anonymous_links_to_login(client, db):
    response = client.get("/")
    assert response.status_code == 200
    assert "/accounts/login/" in response.content.decode()


def test_home_page_lists_the_users_kbs_escaped(client, alice, make_kb, make_user):
    make_kb(alice, "<script>alert(1)</script>")
    make_kb(make_user("zoe"), "Zoe private KB")
    client.force_login(alice)
    content = client.get("/").content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in content and "<script>alert" not in content
    assert "Zoe private KB" not in content
    assert "/api/docs/" in content


def test_deleting_the_last_reader_group_of_a_document_is_refused(root_client, kb, ready_doc):
    """Issue 8: deleting a group deleted its restriction rows, so a document restricted to it alone became
    readable by every viewer of its KB. The admin now lists such documents as protected and keeps the group."""
    hr, finance, spare = (Group.objects.create(name=n) for n in ("hr", "finance", "spare"))
    ready_doc.restricted_to_groups.set([hr])
    response = root_client.post(f"/admin/auth/group/{hr.pk}/delete/", {"post": "yes"}, HTTP_ACCEPT_LANGUAGE="en")
    assert Group.objects.filter(pk=hr.pk).exists() and "no reader group would be left" in response.content.decode()
    # Bulk deletion of all its reader groups is refused the same way; a group that leaves a reader is deleted.
    ready_doc.restricted_to_groups.set([hr, finance])
    root_client.post("/admin/auth/group/", {"action": "delete_selected", "_selected_action": [hr.pk, finance.pk], "post": "yes"})
    assert Group.objects.filter(pk__in=[hr.pk, finance.pk]).count() == 2
    root_client.post(f"/admin/auth/group/{finance.pk}/delete/", {"post": "yes"})
    root_client.post(f"/admin/auth/group/{spare.pk}/delete/", {"post": "yes"})
    assert not Group.objects.filter(pk__in=[finance.pk, spare.pk]).exists()
    assert list(ready_doc.restricted_to_groups.all()) == [hr]
