"""The deterministic follow-up rewrite (no LLM): reference words and short questions borrow the previous subject."""
from __future__ import annotations

import pytest

from chat.rewrite import Rewrite, needs_context, rewrite_clean, rewrite_fallback, subject_of

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


@pytest.mark.parametrize("previous, follow_up, expected", [
    ("出差去北京住宿能报多少？", "那杭州呢？", "出差去杭州住宿能报多少"),          # place for place
    ("张伟负责哪个项目？", "那李娜呢？", "李娜负责哪个项目"),                      # person for person
    ("Windows上怎么安装客户端？", "那macOS呢？", "macOS上怎么安装客户端"),        # Latin-script name
    ("第四季度线上广告预算是多少？", "那第三季度呢？", "第三季度线上广告预算是多少"),  # number, same unit
    ("2023年的营收是多少？", "那2024年呢？", "2024年的营收是多少"),
    ("知库专业版的价格是多少？", "那企业版呢？", "知库企业版的价格是多少"),        # same length and last character
    ("婚假有几天？", "那年假呢", "年假有几天"),
])
def test_a_follow_up_naming_a_thing_of_the_same_kind_asks_the_same_question(previous, follow_up, expected):
    assert rewrite_fallback(follow_up, [previous]) == Rewrite(expected, "rules")


def test_the_leading_connective_is_not_glued_to_the_next_word():
    query = rewrite_fallback("那线上广告呢？", ["第四季度市场预算是多少？"]).query
    assert query == "第四季度市场预算 线上 广告"
    assert "那线" not in query


@pytest.mark.parametrize("previous, follow_up", [
    ("第四季度市场预算是多少？", "那线上广告呢？"),
    ("出差去北京住宿能报多少？", "那杭州呢？"),
    ("知库专业版有哪些功能？", "它支持单点登录吗？"),
])
def test_rewrites_keep_words_whole(previous, follow_up):
    """Every word of the rewrite is a word of the follow-up's or the previous question's jieba cut."""
    import jieba

    allowed = set(jieba.lcut(previous)) | set(jieba.lcut(follow_up.lstrip("那")))
    for part in rewrite_fallback(follow_up, [previous]).query.split():
        assert set(jieba.lcut(part)) <= allowed, part


def test_a_follow_up_with_its_own_subject_swaps_only_the_previous_subject():
    query = rewrite_fallback("那企业版支持单点登录吗？", PREVIOUS).query
    assert query.split() == ["知库企业版", "支持", "单点", "登录"]


def test_a_follow_up_with_its_own_unrelated_subject_carries_nothing():
    assert rewrite_fallback("那审批要多久？", ["报销单怎么提交？"]) == Rewrite("那审批要多久？", "none")


def test_a_subject_that_only_points_back_gets_the_previous_subject():
    query = rewrite_fallback("该版本的价格呢？", PREVIOUS).query
    assert query.startswith("知库专业版 ") and query.endswith(" 价格")


def test_a_count_swaps_for_a_count_but_not_for_a_question_word():
    assert rewrite_fallback("那3台呢？", ["需要2台服务器吗？"]).query == "需要3台服务器吗"
    assert "多少" not in rewrite_fallback("那3台呢？", ["需要多少台服务器？"]).query
