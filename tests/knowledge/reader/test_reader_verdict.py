"""What the reader decides: the verdict (answered only when it reads the answer), the unit quoted (the asked-about
row), the English question over Chinese sheets; off, the judge alone as before. Through search and chat, with the
shipped delta in the real runtime."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import override_settings

from knowledge.retrieval import reading
from knowledge.retrieval.judge import ANSWERED, NOT_FOUND, UNCERTAIN, Judge
from knowledge.services.corpus import corpus_ingest
from tests.helpers import searched

SPECS = Path(__file__).resolve().parents[3] / "devdata" / "heldout" / "specs-zh"
SHEET = {"id": "mill", "title": "精工数控立式加工中心技术参数", "text": (
    "## 精工数控立式加工中心技术参数\n| 型号 | 主轴最高转速 | 主电机功率 | 机床重量 |\n|---|---|---|---|\n"
    "| XK-300 | 10000转/分 | 3.7千瓦 | 2.1吨 |\n| XK-500 | 8000转/分 | 5.5千瓦 | 3.6吨 |\n| XK-800 | 6000转/分 | 11千瓦 | 6.8吨 |")}
POWER = {"id": "power", "title": "电源与环境要求",
         "text": "精工数控加工中心需接入380伏三相电源，电压波动不超过正负百分之十，接地电阻不大于4欧姆。"}


@pytest.mark.parametrize(("judge", "best", "talk", "expected"), [
    (ANSWERED, 0.9, False, (ANSWERED, "reader")),
    (ANSWERED, 0.2, False, (UNCERTAIN, "reader")),  # the judge was sure; the reader did not find it stated
    (UNCERTAIN, 0.8, False, (ANSWERED, "reader")),  # the reader read the answer: no hedging
    (NOT_FOUND, 0.95, False, (UNCERTAIN, "reader")),  # under the gate, but read as answered: shown, hedged
    (NOT_FOUND, 0.6, False, (NOT_FOUND, "judge")),
    (ANSWERED, 0.99, True, (ANSWERED, "judge")),  # talk: the reader is not asked
    (UNCERTAIN, None, False, (UNCERTAIN, "judge")),  # nothing read
])
def test_decide(judge, best, talk, expected):
    assert reading.decide(judge, best, talk=talk, answer_line=0.5, rescue_line=0.9) == expected


def test_windows_read_the_asked_about_row_with_its_header():
    from knowledge.retrieval.types import Candidate

    cand = Candidate(chunk_id=1, kb_id=1, document_id=1, content=SHEET["text"], title=SHEET["title"])
    windows = reading.windows_of("XK-800 的主轴最高转速是多少", cand)
    assert len(windows) <= reading.UNITS_PER_CANDIDATE
    assert any(text.startswith("| 型号 |") and "XK-800" in text for _, _, text in windows)


@pytest.fixture
def sheets(kb, alice):
    corpus_ingest(kb=kb, passages=[SHEET, POWER], user=alice)
    return kb


@pytest.mark.django_db
def test_with_the_reader_the_asked_row_is_read_best_and_off_the_judge_decides_alone(sheets, alice):
    result = searched(user=alice, query="XK-800 的主轴最高转速是多少？", kb_ids=[sheets.pk], top_k=3)
    assert result.reader is not None and result.verdict_by == "reader"
    top = result.candidates[0]
    assert top.reader_score is not None and "XK-800" in top.reader_unit["text"].splitlines()[-1]
    with override_settings(ZHIKU_READER=False):
        off = searched(user=alice, query="XK-800 的主轴最高转速是多少？", kb_ids=[sheets.pk], top_k=3)
    assert off.reader is None and off.verdict_by == "judge"
    assert all(c.reader_score is None for c in off.candidates)
    assert off.verdict == Judge.verdict(off.relevance, off.threshold, off.answer_threshold)
    assert [c.chunk_id for c in off.candidates] == [c.chunk_id for c in result.candidates]  # the reader reorders nothing


@pytest.mark.django_db
def test_the_search_api_shows_the_reader(client, sheets, alice):
    client.force_login(alice)
    body = client.post("/api/search/", {"query": "XK-500 的主电机功率是多少", "kb_ids": [sheets.pk], "top_k": 3},
                       content_type="application/json").json()
    assert body["verdict_by"] == "reader" and 0 <= body["reader"] <= 1
    assert "reader_score" in body["results"][0]["scores"] and "reader_unit" in body["results"][0]


def _chat(capsys, *args) -> dict:
    call_command("chat_eval", *args)
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.mark.django_db(transaction=True)
def test_chat_quotes_the_row_of_the_asked_model_and_reports_the_reader_time(tmp_path, capsys):
    corpus, queries = tmp_path / "c.jsonl", tmp_path / "q.jsonl"
    corpus.write_text("\n".join(json.dumps(p, ensure_ascii=False) for p in [SHEET, POWER]), encoding="utf-8")
    queries.write_text("\n".join(json.dumps(q, ensure_ascii=False) for q in [
        {"id": "a", "text": "XK-800 的主轴最高转速是多少？", "relevant": ["mill"], "answers": ["6000转/分"]},
        {"id": "b", "text": "XK-300 的机床重量是多少？", "relevant": ["mill"], "answers": ["2.1吨"]},
    ]), encoding="utf-8")
    m = _chat(capsys, "--corpus", str(corpus), "--queries", str(queries), "--kb", "rows", "--json", "--per-query")
    assert m["answer_contains"] == 1.0
    for q in m["per_query"]:
        assert "8000转/分" not in q["answer"]  # one row quoted, not the table
    assert m["reader_ms_p50"] > 0 and m["reader_ms_p95"] >= m["reader_ms_p50"]


@pytest.mark.django_db(transaction=True)
def test_chat_eval_followups_mode(tmp_path, capsys):
    pairs = tmp_path / "f.jsonl"
    pairs.write_text("\n".join(json.dumps(p, ensure_ascii=False) for p in [
        {"id": "1", "previous": "XK-500 的主轴最高转速是多少？", "followup": "那 XK-800 呢？", "answer": "6000转/分"},
        {"id": "2", "previous": ["XK-300 的机床重量是多少？"], "followup": "那 800 呢？", "answer": "6.8吨"},
    ]), encoding="utf-8")
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps(SHEET, ensure_ascii=False), encoding="utf-8")
    m = _chat(capsys, "--corpus", str(corpus), "--followups", str(pairs), "--kb", "fu", "--json", "--per-query")
    assert m["pairs"] == 2 and m["errors"] == 0
    assert [p["query"] for p in m["per_pair"]] == ["XK-800 的主轴最高转速是多少", "XK-800 的机床重量是多少"]
    assert m["holds_answer"] == 1.0 and m["wrong_answered"] == 0.0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"previous": "x"}\n', encoding="utf-8")
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="previous"):
        call_command("chat_eval", "--corpus", str(corpus), "--followups", str(bad), "--kb", "fu", "--json")


@pytest.mark.django_db
def test_the_not_found_text_follows_the_question_language_when_the_kb_has_one(sheets, alice):
    sheets.not_found_text_en = "Sorry, the knowledge base has nothing on that."
    sheets.save(update_fields=["not_found_text_en"])
    en = searched(user=alice, query="Who won the football world cup in 1998?", kb_ids=[sheets.pk], top_k=3)
    zh = searched(user=alice, query="1998年世界杯冠军是哪个国家？", kb_ids=[sheets.pk], top_k=3)
    assert (en.verdict, zh.verdict) == (NOT_FOUND, NOT_FOUND)
    assert en.not_found_text == "Sorry, the knowledge base has nothing on that."
    assert zh.not_found_text == sheets.not_found_text
    sheets.not_found_text_en = ""
    sheets.save(update_fields=["not_found_text_en"])
    assert searched(user=alice, query="Who won the football world cup in 1998?", kb_ids=[sheets.pk],
                      top_k=3).not_found_text == sheets.not_found_text
