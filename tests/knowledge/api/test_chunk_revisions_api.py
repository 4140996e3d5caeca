"""GET …/documents/<id>/chunks/<id>/revisions/ and POST …/revisions/<n>/revert/: who may, what they answer."""
from __future__ import annotations

import pytest

from knowledge.models import Chunk, Role
from knowledge.services.kbs import membership_set

GUIDE = "# 退货政策\n\n七天无理由退货，商品需保持完好，包装齐全。\n\n## 运费\n\n满99元包邮，偏远地区除外。\n"


@pytest.fixture
def edited(kb, ingest, alice, client_for):
    """The guide's first chunk, edited through the API by its owner."""
    (document,) = ingest(kb, {"guide.md": GUIDE}, user=alice)
    chunk = Chunk.objects.filter(document=document).order_by("ordinal").first()
    response = client_for(alice).patch(f"/api/kbs/{kb.pk}/chunks/{chunk.pk}/", {"content": "三十天无理由退货。"}, format="json")
    assert response.status_code == 200, response.content
    return chunk


def url(chunk, rest: str = "") -> str:
    return f"/api/kbs/{chunk.kb_id}/documents/{chunk.document_id}/chunks/{chunk.pk}/revisions/{rest}"


@pytest.mark.django_db
class TestList:
    def test_lists_who_when_and_the_diff(self, edited, alice, client_for):
        alice.last_name, alice.first_name = "王", "丽"
        alice.save()
        response = client_for(alice).get(url(edited))
        assert response.status_code == 200, response.content
        (revision,) = response.json()["results"]
        assert revision["number"] == 1 and revision["kind"] == "edit" and revision["kind_label"] == "已编辑"
        assert revision["user"] == "alice" and revision["user_name"] == "王丽" and revision["document_version"] == 1
        assert revision["content_before"] == edited.content and revision["content_after"] == "三十天无理由退货。"
        assert {"op": "delete", "text": "七"} in revision["diff"] and {"op": "insert", "text": "三十"} in revision["diff"]
        assert "-" + edited.content.splitlines()[0] in revision["unified_diff"].splitlines()

    def test_english_on_request(self, edited, alice, client_for):
        response = client_for(alice).get(url(edited), HTTP_ACCEPT_LANGUAGE="en")
        assert response.json()["results"][0]["kind_label"] == "edited"

    def test_a_viewer_may_list(self, edited, bob, client_for):
        membership_set(kb=edited.kb, user=bob, role=Role.VIEWER)
        assert client_for(bob).get(url(edited)).status_code == 200

    def test_someone_without_a_role_on_the_kb_gets_404(self, edited, bob, make_kb, client_for):
        make_kb(bob, "bob's own")  # a viewer of another KB
        response = client_for(bob).get(url(edited))
        assert response.status_code == 404 and response.json()["error"]["code"] == "kb_not_found"

    def test_a_chunk_of_another_document_is_404(self, edited, alice, kb, ingest, client_for):
        (other,) = ingest(kb, {"other.md": "# 其他\n\n别的内容。\n"}, user=alice)
        response = client_for(alice).get(f"/api/kbs/{kb.pk}/documents/{other.pk}/chunks/{edited.pk}/revisions/")
        assert response.status_code == 404 and response.json()["error"]["code"] == "chunk_not_found"


@pytest.mark.django_db
class TestRevert:
    def test_an_editor_reverts_to_the_text_before(self, edited, alice, client_for):
        client = client_for(alice)
        response = client.post(url(edited, "1/revert/"))
        assert response.status_code == 200, response.content
        assert response.json()["content"] == edited.content
        kinds = [(r["number"], r["kind"], r["reverts"]) for r in client.get(url(edited)).json()["results"]]
        assert kinds == [(2, "revert", 1), (1, "edit", None)]

    def test_a_viewer_may_not_revert(self, edited, bob, client_for):
        membership_set(kb=edited.kb, user=bob, role=Role.VIEWER)
        response = client_for(bob).post(url(edited, "1/revert/"))
        assert response.status_code == 403 and response.json()["error"]["code"] == "role_required"
        assert Chunk.objects.get(pk=edited.pk).content == "三十天无理由退货。"

    def test_an_unknown_revision_is_404_with_its_code(self, edited, alice, client_for):
        response = client_for(alice).post(url(edited, "7/revert/"))
        assert response.status_code == 404 and response.json()["error"]["code"] == "revision_not_found"

    def test_revert_is_audited(self, edited, alice, client_for):
        from audit.models import AuditEntry

        client_for(alice).post(url(edited, "1/revert/"))
        entry = AuditEntry.objects.filter(action="chunk.edit").order_by("-id").first()
        assert entry.actor == alice and entry.changes["content"] == ["三十天无理由退货。", edited.content]
