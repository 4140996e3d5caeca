"""chat_eval: labelled questions asked as chat turns, scored on the answer text, its citations and not-found."""
from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from chat.evaluation import contains_answer, normalise
from chat.models import Conversation

pytestmark = pytest.mark.django_db(transaction=True)

PASSAGES = [
    ("p1", "价格", "知库专业版的价格是每年 9800 元，包含 20 个用户席位。企业版请联系销售。"),
    ("p2", "安装", "安装知库需要 Python 3.11。运行 make run 即可在本机启动，无需单独安装数据库。"),
    ("p3", "退款", "购买后七天内可以无理由退款，退款在三个工作日内原路返回。"),
]
QUESTIONS = [
    ("q1", "知库专业版的价格是多少", ["p1"], ["每年 9800 元"]),
    ("q2", "安装知库需要什么版本的 Python", ["p2"], ["Ｐｙｔｈｏｎ　3.11"]),  # full-width and an ideographic space
    ("q3", "购买后多少天内可以无理由退款", ["p3"], ["七天内"]),
    ("q4", "火星上有水吗", [], []),
]
KEYS = {"answer_contains", "answer_contains_full", "citation_precision", "not_found_rate_answerable",
        "not_found_rate_unanswerable", "answer_chars_p50", "first_token_ms_p50", "questions", "answerable",
        "unanswerable", "with_answers", "answered", "citations"}


@pytest.fixture
def labelled(tmp_path):
    corpus, queries = tmp_path / "corpus.jsonl", tmp_path / "queries.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": i, "title": t, "text": x}, ensure_ascii=False) for i, t, x in PASSAGES),
                      encoding="utf-8")
    queries.write_text("\n".join(json.dumps({"id": i, "text": t, "relevant": r, "answers": a}, ensure_ascii=False)
                                 for i, t, r, a in QUESTIONS), encoding="utf-8")
    return ["--corpus", str(corpus), "--queries", str(queries), "--kb", "answers", "--json"]


def run(capsys, *args) -> dict:
    call_command("chat_eval", *args)
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_extractive_answers_hold_the_answer_and_unanswerable_questions_are_not_found(labelled, capsys):
    metrics = run(capsys, *labelled, "--per-query")
    assert KEYS <= set(metrics)
    assert (metrics["questions"], metrics["answerable"], metrics["unanswerable"]) == (4, 3, 1)
    assert metrics["answer_contains"] == 1.0 and metrics["answer_contains_full"] == 1.0
    assert metrics["not_found_rate_answerable"] == 0.0
    assert metrics["not_found_rate_unanswerable"] == 1.0
    assert metrics["citations"] >= 3 and metrics["citation_precision"] >= 0.5
    assert 0 < metrics["answer_chars_p50"] <= 200 and metrics["first_token_ms_p50"] > 0
    assert metrics["mode"] == "extractive"
    assert {q["id"]: q["contains"] for q in metrics["per_query"]} == {"q1": True, "q2": True, "q3": True, "q4": False}
    assert not Conversation.objects.exists()  # an evaluation leaves no conversations behind


def test_dropping_passages_makes_their_questions_unanswerable(labelled, capsys):
    metrics = run(capsys, *labelled[:-3], "--kb", "answers-dropped", "--json", "--drop-relevant", "1")
    assert (metrics["answerable"], metrics["unanswerable"]) == (2, 2)
    assert metrics["answer_contains"] == 1.0


def test_llm_answers_give_the_same_figures(labelled, capsys, llm_on):
    """Against the fake OpenAI-compatible server: the same JSON, so the command runs unchanged against a real one."""
    extractive = run(capsys, *labelled)
    metrics = run(capsys, *labelled, "--llm")
    assert set(metrics) == set(extractive)
    assert metrics["mode"] == "llm" and llm_on.streams
    # The fake always answers 「知库专业版的价格是每年 9800 元[1]。」: right for q1 only, and it cites [1].
    assert metrics["answer_contains"] == pytest.approx(1 / 3, abs=1e-3)
    assert metrics["answer_chars_p50"] == len("知库专业版的价格是每年 9800 元。")


def test_llm_flag_without_a_configured_llm_is_refused(labelled):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="ZHIKU_LLM_BASE_URL"):
        call_command("chat_eval", *labelled, "--llm")


@pytest.mark.parametrize("text, span, expected", [
    ("需要 Ｐｙｔｈｏｎ 3.11。", "python3.11", True),
    ("價格是每年 9800 元", "价格是每年9800元", True),
    ("价格是每年 9800 元", "每年 9900 元", False),
])
def test_answer_matching_ignores_whitespace_width_and_script(text, span, expected):
    assert contains_answer(text, [span]) is expected
    assert normalise("Ａ　b") == "ab"


def test_the_evaluate_api_scores_answers_when_asked(kb, ingest, alice, client_for):
    ingest(kb, {f"{i}.md": f"# {t}\n\n{x}\n" for i, t, x in PASSAGES})
    c = client_for(alice)
    created = c.post(f"/api/kbs/{kb.pk}/eval-questions/", [
        {"text": t, "relevant": [f"{r[0]}.md"] if r else [], "answers": a} for _, t, r, a in QUESTIONS
    ], format="json")
    assert created.status_code == 201 and created.json()[0]["answers"] == ["每年 9800 元"]
    plain = c.post(f"/api/kbs/{kb.pk}/evaluate/", {}, format="json").json()
    assert "answers" not in plain and plain["recall@1"] == 1.0  # unchanged unless asked
    metrics = c.post(f"/api/kbs/{kb.pk}/evaluate/", {"answers": True}, format="json").json()
    assert metrics["recall@1"] == 1.0
    assert KEYS <= set(metrics["answers"])
    assert metrics["answers"]["answer_contains"] == 1.0 and metrics["answers"]["not_found_rate_unanswerable"] == 1.0
    assert not Conversation.objects.exists()


def test_a_question_the_chat_refuses_is_counted_as_an_error(kb, alice):
    from chat.evaluation import AnswerQuestion, answer_evaluate

    question = AnswerQuestion(id="x", text="问" * 1001, relevant=["a"], answers=["b"])
    metrics = answer_evaluate(user=alice, kb_ids=[kb.pk], questions=[question])
    assert metrics["errors"] == 1 and metrics["answer_contains"] == 0.0 and metrics["not_found_rate_answerable"] == 1.0


def test_answer_metrics_grade_the_three_verdicts_and_count_uncertain_answers_as_given():
    from chat.evaluation import AnswerQuestion, TurnOutcome, answer_metrics

    questions = [AnswerQuestion(id=str(i), text="q", relevant=["d"], answers=["9800"]) for i in range(4)]
    questions.append(AnswerQuestion(id="u", text="q", relevant=[], answers=[]))
    statement = "没有找到确切答案，以下内容可能相关：\n\n"
    outcomes = [
        TurnOutcome(answer="价格为每年 9800 元[1]。", hit=True, verdict="answered", cited_chunk_ids=[1]),
        TurnOutcome(answer=statement + "价格为每年 9800 元[1]。", hit=True, verdict="uncertain", cited_chunk_ids=[1]),
        TurnOutcome(answer=statement + "安装需要 4 GB[2]。", hit=True, verdict="uncertain", cited_chunk_ids=[2]),
        TurnOutcome(answer="抱歉，知识库中未找到相关内容。", hit=False, verdict="not_found"),
        TurnOutcome(answer=statement + "价格为每年 9800 元[1]。", hit=True, verdict="uncertain", cited_chunk_ids=[1]),
    ]
    m = answer_metrics(questions, outcomes, {1: "知库专业版的价格为每年 9800 元。", 2: "内存至少 4 GB。"})
    assert m["answer_contains"] == 0.5  # answered and uncertain answers both count
    assert m["answer_contains_answered"] == 0.25 and m["answer_precision_answered"] == 1.0
    assert m["answer_contains_given"] == round(2 / 3, 4)
    assert m["verdicts"]["answerable"] == {"answered": 0.25, "uncertain": 0.5, "not_found": 0.25}
    assert m["verdicts"]["unanswerable"] == {"answered": 0.0, "uncertain": 1.0, "not_found": 0.0}
    assert m["not_found_rate_answerable"] == 0.25 and m["citation_precision"] == round(2 / 3, 4)
    # The uncertain statement is a frame, not content: not counted in the answer's length.
    assert m["answer_chars_p50"] == float(len("价格为每年 9800 元。"))
