"""The deterministic follow-up rewrite (no LLM): reference words and short questions borrow the previous subject."""
from __future__ import annotations

import pytest

from chat.rewrite import needs_context, rewrite_clean, rewrite_fallback, subject_of

PREVIOUS = ["知库专业版有哪些功能？"]


def test_pronoun_follow_up_gets_the_previous_subject():
    assert rewrite_fallback("那它的价格呢？", PREVIOUS).query == "知库专业版 价格"


@pytest.mark.parametrize("question", ["其价格是多少？", "价格？", "该版本的价格呢"])
def test_other_reference_markers_and_short_questions_are_rewritten(question):
    rewrite = rewrite_fallback(question, PREVIOUS)
    assert rewrite.method == "rules"
    assert rewrite.query.startswith("知库专业版")
    assert "价格" in rewrite.query


def test_the_old_questions_attribute_is_not_carried_over():
    assert "功能" not in rewrite_fallback("那它的价格呢？", PREVIOUS).query


def test_standalone_question_is_unchanged():
    rewrite = rewrite_fallback("如何安装知库并配置数据库？", PREVIOUS)
    assert rewrite.method == "none"
    assert rewrite.query == "如何安装知库并配置数据库？"


def test_first_question_is_unchanged():
    assert rewrite_fallback("那它的价格呢？", []).method == "none"


def test_question_naming_the_subject_already_is_unchanged():
    assert rewrite_fallback("知库专业版的价格呢？", PREVIOUS).method == "none"


def test_latest_standalone_query_is_the_one_followed():
    queries = ["安装指南在哪里", "知库专业版有哪些功能？"]
    assert rewrite_fallback("它支持单点登录吗？", queries).query.startswith("知库专业版")


def test_previous_question_without_a_subject_lends_all_its_keywords():
    query = rewrite_fallback("那它的价格呢？", ["如何安装知库？"]).query
    assert query.split() == ["安装", "知库", "价格"]


def test_follow_up_with_no_keyword_of_its_own_keeps_its_words():
    query = rewrite_fallback("为什么？", PREVIOUS).query
    assert query.startswith("知库 专业版 功能")
    assert query.endswith("为什么")


def test_subject_skips_politeness_words():
    assert subject_of("请问知库专业版有哪些功能？") == "知库专业版"


def test_words_containing_a_marker_do_not_count_as_references():
    assert not needs_context("应该怎么配置数据库连接池")


@pytest.mark.parametrize("raw, expected", [
    ("改写后的问题：知库专业版的价格是多少？", "知库专业版的价格是多少？"),
    ("“知库专业版的价格”\n解释：……", "知库专业版的价格"),
    ("", None),
])
def test_llm_rewrite_is_tidied(raw, expected):
    assert rewrite_clean(raw, question="那它的价格呢？") == expected
