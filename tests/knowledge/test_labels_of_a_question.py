"""GET /api/kbs/{id}/labels/?question=: the labels of one question only (hit testing marks the passages already
labelled for the question tested, issue 47 item 6), the same question however its spaces, case, full-width forms and
trailing punctuation are written; a question that is empty or too long is a 400 with its code."""
from __future__ import annotations

import pytest

from knowledge.models import Chunk
from knowledge.services.labels import label_passage

pytestmark = [pytest.mark.django_db]

DOCS = {"venue.md": "# 场地\n\n公司年会在杭州西湖国宾馆举办。\n", "leave.md": "# 假期\n\n员工每年享有十天带薪年假。\n"}


def chunk(kb, name: str) -> Chunk:
    return Chunk.objects.get(kb=kb, document__source_name=name)


def test_the_labels_of_one_question_only(kb, ingest, alice, client_for):
    ingest(kb, DOCS)
    venue, leave = chunk(kb, "venue.md"), chunk(kb, "leave.md")
    asked = label_passage(user=alice, kb=kb, question="Where is the party?", chunk_id=venue.pk)
    label_passage(user=alice, kb=kb, question="where is the party", chunk_id=leave.pk, wrong=True)  # the same question
    other = label_passage(user=alice, kb=kb, question="年假有几天", chunk_id=leave.pk)
    path = f"/api/kbs/{kb.pk}/labels/"

    for written in ["WHERE  is the party？", "Ｗhere is the party!", "where is the party"]:
        response = client_for(alice).get(path, {"status": "confirmed", "question": written})
        assert response.status_code == 200, response.content
        [label] = response.json()["results"]
        assert (label["id"], label["chunk_ids"], label["negative_chunk_ids"]) == (asked.pk, [venue.pk], [leave.pk])
    found = client_for(alice).get(path, {"status": "confirmed", "question": "年假有几天？"}).json()["results"]
    assert [label["id"] for label in found] == [other.pk]
    assert client_for(alice).get(path, {"status": "confirmed", "question": "年会在哪"}).json()["results"] == []
    assert client_for(alice).get(path, {"question": "年假有几天"}).json()["results"] == []  # pending ones by default
    everything = client_for(alice).get(path, {"status": "confirmed"}).json()["results"]
    assert {label["id"] for label in everything} == {asked.pk, other.pk}


@pytest.mark.parametrize("question", ["", "   ", "问" * 1001])
def test_an_empty_or_too_long_question_is_refused(kb, alice, client_for, question):
    response = client_for(alice).get(f"/api/kbs/{kb.pk}/labels/", {"status": "confirmed", "question": question})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_label_question"
