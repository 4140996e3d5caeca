"""A re-ingest keeps edited chunks whose text is gone as pinned chunks (knowledge/ingestion/pinning.py), searchable
and reported, unless the editor says keep_edits=false; an edit whose text the new chunks hold is not kept twice."""
from __future__ import annotations

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge.keyword_store import keyword_store
from knowledge.models import Chunk, ChunkRevision, Document
from knowledge.services.chunks import chunk_create, chunk_update
from knowledge.services.documents import document_reindex
from tests.helpers import searched

GUIDE = ("# 退货政策\n\n七天无理由退货，商品需保持完好，包装齐全。\n\n"
         "## 运费\n\n满99元包邮，偏远地区除外，需另付运费二十元。\n\n"
         "## 发票\n\n电子发票在确认收货后自动开具，可在订单详情页下载。\n")
EDITED = "独角兽会员享受三十天无理由退货，商品需保持完好。"


@pytest.fixture
def guide(kb, ingest, alice):
    (document,) = ingest(kb, {"guide.md": GUIDE}, user=alice)
    assert document.status == "ready", document.error_message
    return document


def chunks_of(document) -> list[Chunk]:
    return list(Chunk.objects.select_related("kb", "document").filter(document_id=document.pk).order_by("ordinal"))


def reindex(document, run_now, **options) -> Document:
    with run_now(execute=True):
        document_reindex(document=document, **options)
    return Document.objects.get(pk=document.pk)


@pytest.mark.django_db
class TestReindexKeepsEdits:
    def test_an_edit_whose_text_is_gone_stays_pinned_searchable_and_reported(self, guide, alice,
                                                                           django_capture_on_commit_callbacks):
        file_texts = [c.content for c in chunks_of(guide)]
        edited = chunks_of(guide)[0]
        chunk_update(chunk=edited, content=EDITED, user=alice)
        document = reindex(guide, django_capture_on_commit_callbacks)
        assert document.status == "ready" and document.version == 2
        rows = chunks_of(document)
        assert [c.content for c in rows[:-1]] == file_texts  # the file's chunks (its first one again), then the edit
        pinned = rows[-1]
        assert pinned.pk == edited.pk and pinned.content == EDITED and pinned.ordinal == len(rows) - 1
        assert pinned.metadata["pinned"] is True and pinned.metadata["edited"] is True
        assert pinned.metadata["pinned_at_version"] == 2 and pinned.page_start is None
        assert "独角兽" in pinned.tokens and pinned.enriched.endswith(EDITED)
        assert float(np.dot(np.asarray(pinned.embedding), np.asarray(edited.embedding))) > 0.99
        assert document.chunks_total == document.chunks_done == len(rows)
        assert document.metadata["edits"] == {"version": 2, "kept": 1, "dropped": 0, "found": 0}
        assert [(r.number, r.kind, r.document_version) for r in ChunkRevision.objects.filter(chunk=pinned)] == [
            (2, "pin", 2), (1, "edit", 1)]
        keyword_store().invalidate_local()
        found = searched(user=alice, query="独角兽会员三十天退货", kbs=[document.kb], top_k=3)
        hit = next(c for c in found.candidates if c.chunk_id == pinned.pk)
        assert hit.bm25_rank is not None and hit.vector_rank is not None

    def test_a_chunk_added_by_hand_is_kept_too(self, guide, alice, django_capture_on_commit_callbacks):
        added = chunk_create(document=guide, content="独角兽会员可以延长保修一年。", user=alice)
        document = reindex(guide, django_capture_on_commit_callbacks)
        rows = chunks_of(document)
        assert rows[-1].pk == added.pk and rows[-1].metadata == {"manual": True, "pinned": True, "pinned_at_version": 2}
        assert [r.kind for r in ChunkRevision.objects.filter(chunk=added)] == ["pin", "create"]

    def test_keep_edits_false_drops_the_edit_and_its_history(self, guide, alice, django_capture_on_commit_callbacks):
        edited = chunks_of(guide)[0]
        chunk_update(chunk=edited, content=EDITED, user=alice)
        document = reindex(guide, django_capture_on_commit_callbacks, keep_edits=False)
        rows = chunks_of(document)
        assert EDITED not in [c.content for c in rows] and len(rows) == len(chunks_of(guide))
        assert not any(c.metadata.get("pinned") for c in rows) and not ChunkRevision.objects.exists()
        assert document.metadata["edits"] == {"version": 2, "kept": 0, "dropped": 1, "found": 0}
        assert "keep_edits" not in document.metadata

    def test_a_second_reindex_without_edits_clears_the_report(self, guide, alice, django_capture_on_commit_callbacks):
        chunk_update(chunk=chunks_of(guide)[0], content=EDITED, user=alice)
        document = reindex(guide, django_capture_on_commit_callbacks, keep_edits=False)
        document = reindex(document, django_capture_on_commit_callbacks)
        assert "edits" not in document.metadata


@pytest.mark.django_db
class TestNewVersionKeepsEdits:
    def test_an_edit_the_new_file_holds_is_not_duplicated_and_keeps_its_history(self, guide, alice, client_for,
                                                                              django_capture_on_commit_callbacks):
        edited = chunks_of(guide)[0]
        chunk_update(chunk=edited, content=edited.content.replace("七天", "十五天"), user=alice)
        new_file = GUIDE.replace("七天", "十五天")
        with django_capture_on_commit_callbacks(execute=True):
            response = client_for(alice).post(f"/api/kbs/{guide.kb_id}/documents/", {
                "files": [SimpleUploadedFile("guide.md", new_file.encode())]}, format="multipart")
        assert response.status_code == 202, response.content
        document = Document.objects.get(pk=guide.pk)
        rows = chunks_of(document)
        assert [c.content for c in rows].count(edited.content.replace("七天", "十五天")) == 1
        assert not any(c.metadata.get("pinned") for c in rows)
        holder = rows[0]
        assert holder.metadata.get("edited") is True  # still the edit of someone: a later version that drops it keeps it
        assert [(r.number, r.kind) for r in ChunkRevision.objects.filter(chunk=holder)] == [(1, "edit")]
        assert document.metadata["edits"] == {"version": 2, "kept": 0, "dropped": 0, "found": 1}

    def test_upload_with_keep_edits_false_drops_the_edit(self, guide, alice, client_for,
                                                         django_capture_on_commit_callbacks):
        chunk_update(chunk=chunks_of(guide)[0], content=EDITED, user=alice)
        with django_capture_on_commit_callbacks(execute=True):
            response = client_for(alice).post(f"/api/kbs/{guide.kb_id}/documents/", {
                "files": [SimpleUploadedFile("guide.md", GUIDE.replace("二十元", "三十元").encode())],
                "keep_edits": "false"}, format="multipart")
        assert response.status_code == 202, response.content
        document = Document.objects.get(pk=guide.pk)
        assert document.version == 2 and EDITED not in [c.content for c in chunks_of(document)]
        assert document.metadata["edits"]["dropped"] == 1

    def test_upload_keeps_edits_by_default_and_the_api_reports_it(self, guide, alice, client_for,
                                                                  django_capture_on_commit_callbacks):
        chunk_update(chunk=chunks_of(guide)[0], content=EDITED, user=alice)
        client = client_for(alice)
        with django_capture_on_commit_callbacks(execute=True):
            client.post(f"/api/kbs/{guide.kb_id}/documents/", {
                "files": [SimpleUploadedFile("guide.md", GUIDE.replace("二十元", "三十元").encode())]}, format="multipart")
        body = client.get(f"/api/kbs/{guide.kb_id}/documents/{guide.pk}/").json()
        assert body["version"] == 2 and body["metadata"]["edits"] == {"version": 2, "kept": 1, "dropped": 0, "found": 0}

    def test_a_bad_keep_edits_value_is_400(self, guide, alice, client_for):
        response = client_for(alice).post(f"/api/kbs/{guide.kb_id}/documents/", {
            "files": [SimpleUploadedFile("guide.md", b"# x\n\ny\n")], "keep_edits": "maybe"}, format="multipart")
        assert response.status_code == 400 and response.json()["error"]["code"] == "invalid"


@pytest.mark.django_db
def test_reindex_api_takes_keep_edits(guide, alice, client_for, django_capture_on_commit_callbacks):
    chunk_update(chunk=chunks_of(guide)[0], content=EDITED, user=alice)
    client = client_for(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/api/kbs/{guide.kb_id}/documents/{guide.pk}/reindex/", {"keep_edits": False},
                               format="json")
    assert response.status_code == 202, response.content
    assert Document.objects.get(pk=guide.pk).metadata["edits"]["dropped"] == 1
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/api/kbs/{guide.kb_id}/documents/{guide.pk}/reindex/")  # no body: keep them
    assert response.status_code == 202, response.content
    bad = client.post(f"/api/kbs/{guide.kb_id}/documents/{guide.pk}/reindex/", {"keep_edits": "x"}, format="json")
    assert bad.status_code == 400



@pytest.mark.django_db
def test_kept_chunks_move_past_each_others_ordinals(kb, ingest, alice):
    """A short new version of a long document: kept chunks whose ordinals differ by the new chunk count plus the
    kept count plus one (what a shift by those counts alone would collide on, row by row) are pinned in order."""
    sections = "".join(f"## 第{i}节\n\n这是第{i}节的正文，讲述编号为{i}的规定。\n\n" for i in range(14))
    (document,) = ingest(kb, {"rules.md": "# 规章\n\n" + sections}, user=alice)
    rows = chunks_of(document)
    short = "# 规章\n\n只剩一条规定：独角兽不得入内。\n"
    drafts = 1  # the short file's chunk count, checked below
    picked = [rows[0], rows[drafts + 2 + 1]]
    for n, chunk in enumerate(picked):
        chunk_update(chunk=chunk, content=f"手工改写的第{n}条规定：麒麟条款。", user=alice)
    (document,) = ingest(kb, {"rules.md": short}, user=alice)
    after = chunks_of(document)
    assert len(after) == drafts + 2 and document.version == 2
    assert [c.pk for c in after[-2:]] == [c.pk for c in picked] and all(c.metadata["pinned"] for c in after[-2:])
    assert [c.ordinal for c in after] == [0, 1, 2]


@pytest.mark.django_db
@pytest.mark.parametrize("ahead", [True, False], ids=["embedded-before-the-commit", "embedded-in-the-commit"])
def test_a_pinned_chunk_is_embedded_again_under_the_new_title(guide, alice, ingest, monkeypatch, ahead):
    """The new version's title changes the pinned chunk's enriched text: its vector is the new text's, whether embedded
    ahead of the commit or, for an edit made meanwhile, in it."""
    from knowledge.embeddings import get_embedder
    from knowledge.ingestion import pinning
    from knowledge.ingestion.vectors import content_hash

    edited = chunks_of(guide)[0]
    chunk_update(chunk=edited, content=EDITED, user=alice)
    if not ahead:
        monkeypatch.setattr(pinning, "vectors_ahead", lambda staging, *, title: {})
    (document,) = ingest(guide.kb, {"guide.md": GUIDE.replace("# 退货政策", "# 售后服务条款")}, user=alice)
    pinned = Chunk.objects.get(pk=edited.pk)
    assert pinned.metadata["pinned"] is True and pinned.enriched.startswith("售后服务条款\n")
    assert pinned.content_hash == content_hash(pinned.enriched, guide.kb.embedding_model) != edited.content_hash
    expected = get_embedder(guide.kb.embedding_model).embed_passages([pinned.enriched])[0]
    assert float(np.dot(np.asarray(pinned.embedding), np.asarray(expected))) > 0.999
