"""A chunk's history: every change of its text is a revision, shown as a diff and reverted through chunk_update."""
from __future__ import annotations

import pytest

from core.errors import Conflict, NotFound
from knowledge.keyword_store import keyword_store
from knowledge.models import Chunk, ChunkRevision, KnowledgeBase
from knowledge.services.chunks import chunk_create, chunk_update
from knowledge.services.revisions import revision_list, revision_revert
from knowledge.text_diff import text_diff, unified_diff
from tests.helpers import searched

GUIDE = "# 退货政策\n\n七天无理由退货，商品需保持完好，包装齐全。\n\n## 运费\n\n满99元包邮，偏远地区除外。\n"
EDITED = "三十天无理由退货，独角兽会员免运费。"


@pytest.fixture
def guide(kb, ingest, alice):
    (document,) = ingest(kb, {"guide.md": GUIDE}, user=alice)
    assert document.status == "ready", document.error_message
    return document


def first_chunk(document) -> Chunk:
    return Chunk.objects.select_related("kb", "document").filter(document=document).order_by("ordinal").first()


class TestTextDiff:
    def test_cjk_text_is_compared_by_character(self):
        runs = text_diff("价格是每月一百元。", "价格是每月一百二十元。")
        assert runs == [{"op": "equal", "text": "价格是每月一百"}, {"op": "insert", "text": "二十"},
                        {"op": "equal", "text": "元。"}]

    def test_runs_give_back_both_texts(self):
        before, after = "Returns within 7 days.\n运费自理。", "Returns within 30 days.\n满99元包邮。"
        runs = text_diff(before, after)
        assert "".join(r["text"] for r in runs if r["op"] != "insert") == before
        assert "".join(r["text"] for r in runs if r["op"] != "delete") == after
        assert {"op": "delete", "text": "7"} in runs and {"op": "insert", "text": "30"} in runs  # words, not letters

    def test_unified_diff_is_line_by_line(self):
        assert unified_diff("a\nb", "a\nc").splitlines()[2:] == ["@@ -1,2 +1,2 @@", " a", "-b", "+c"]
        assert unified_diff("same", "same") == ""


@pytest.mark.django_db
class TestRevisionsWritten:
    def test_an_edit_is_a_revision_with_who_and_the_text_before_and_after(self, guide, alice):
        chunk = first_chunk(guide)
        original = chunk.content
        chunk_update(chunk=chunk, content=EDITED, user=alice)
        (revision,) = revision_list(chunk=chunk)
        assert (revision.number, revision.kind, revision.user, revision.document_version) == (1, "edit", alice, 1)
        assert (revision.content_before, revision.content_after) == (original, EDITED)
        assert Chunk.objects.get(pk=chunk.pk).metadata["edited"] is True

    def test_switching_on_and_off_or_saving_the_same_text_writes_none(self, guide, alice):
        chunk = first_chunk(guide)
        chunk_update(chunk=chunk, enabled=False, user=alice)
        chunk_update(chunk=chunk, content=chunk.content + "  ", user=alice)  # stripped: the same text
        assert not ChunkRevision.objects.filter(chunk=chunk).exists()

    def test_revisions_are_numbered_per_chunk(self, guide, alice, bob):
        chunk = first_chunk(guide)
        original = chunk.content
        chunk_update(chunk=chunk, content="第一次修改。", user=alice)
        chunk_update(chunk=chunk, content="第二次修改。", user=bob)
        other = Chunk.objects.select_related("kb", "document").filter(document=guide).exclude(pk=chunk.pk).first()
        chunk_update(chunk=other, content="另一块的修改。", user=alice)
        rows = [(r.number, r.user.username, r.content_before, r.content_after) for r in revision_list(chunk=chunk)]
        assert rows == [(2, "bob", "第一次修改。", "第二次修改。"), (1, "alice", original, "第一次修改。")]
        assert [r.number for r in revision_list(chunk=other)] == [1]

    def test_a_chunk_added_by_hand_starts_with_a_create_revision(self, guide, alice):
        chunk = chunk_create(document=guide, content="独角兽会员可以延长保修。", user=alice)
        (revision,) = revision_list(chunk=chunk)
        assert (revision.number, revision.kind, revision.content_before, revision.content_after, revision.user) == (
            1, "create", "", "独角兽会员可以延长保修。", alice)


@pytest.mark.django_db
class TestRevert:
    def test_revert_restores_the_text_before_and_search_finds_it(self, guide, alice):
        chunk = first_chunk(guide)
        original = chunk.content
        chunk_update(chunk=chunk, content=EDITED, user=alice)
        version = KnowledgeBase.objects.get(pk=guide.kb_id).version
        reverted = revision_revert(chunk=Chunk.objects.select_related("kb", "document").get(pk=chunk.pk), number=1,
                                   user=alice)
        assert reverted.content == original
        stored = Chunk.objects.get(pk=chunk.pk)
        assert stored.content == original and "七天" in stored.enriched and "独角兽" not in stored.enriched
        assert "edited" not in stored.metadata  # the file's own text again: a re-ingest has nothing to keep
        assert KnowledgeBase.objects.get(pk=guide.kb_id).version == version + 1
        latest = revision_list(chunk=chunk).first()
        assert (latest.number, latest.kind, latest.reverts, latest.content_after) == (2, "revert", 1, original)
        keyword_store().invalidate_local()
        found = searched(user=alice, query="七天无理由退货", kbs=[guide.kb], top_k=3)
        top = next(c for c in found.candidates if c.chunk_id == chunk.pk)
        assert top.bm25_rank is not None  # the keyword index holds the restored text
        gone = searched(user=alice, query="独角兽会员免运费", kbs=[guide.kb], top_k=3)
        assert all(c.bm25_rank is None for c in gone.candidates if c.chunk_id == chunk.pk)

    def test_an_unknown_revision_is_not_found(self, guide, alice):
        chunk = first_chunk(guide)
        with pytest.raises(NotFound) as caught:
            revision_revert(chunk=chunk, number=9, user=alice)
        assert caught.value.code == "revision_not_found"

    def test_the_revision_that_added_a_chunk_cannot_be_reverted(self, guide, alice):
        chunk = chunk_create(document=guide, content="独角兽会员可以延长保修。", user=alice)
        with pytest.raises(Conflict) as caught:
            revision_revert(chunk=chunk, number=1, user=alice)
        assert caught.value.code == "revision_not_revertible"
