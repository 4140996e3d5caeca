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
    assert query == "第四季度线上广告预算是多少"
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


# --- swapping the subject: a bare follow-up asks the previous question about its sibling ---------------------


def test_a_bare_follow_up_replaces_the_previous_subject_and_keeps_its_predicate():
    assert rewrite_fallback("那电机呢？", ["电池保修多久？"]) == Rewrite("电机保修多久", "rules")


def test_a_chained_follow_up_builds_on_the_previous_rewrite_not_on_a_pile_of_subjects():
    queries = ["电池保修多久？"]
    for follow_up in ["那电机呢？", "车架呢？"]:
        queries.append(rewrite_fallback(follow_up, queries).query)
    assert queries[1:] == ["电机保修多久", "车架保修多久"]


@pytest.mark.parametrize("previous, follow_up, expected", [
    ("空调保修几年？", "洗衣机的呢？", "洗衣机保修几年"),                         # 「X的呢」
    ("车架保修几年？", "换成控制器呢？", "控制器保修几年"),                       # 「换成X呢」
    ("洗衣机保修几年？", "那热水器怎么样？", "热水器保修几年"),                   # 「那X怎么样」
    ("空调的保修期是多久？", "那冰箱呢？", "冰箱的保修期是多久"),
    ("E5的电池保修多久？", "那电机呢？", "E5的电机保修多久"),                      # the model stays
    ("充电器多少钱？", "电机呢？", "电机多少钱"),
    ("第三季度线上广告预算是多少？", "线下活动呢？", "第三季度线下活动预算是多少"),  # the budget line, not the budget
    ("E5续航多少？", "E7怎么样？", "E7续航多少"),                                # 「X怎么样」 with a tagged sibling
])
def test_a_common_noun_or_sibling_in_any_bare_form_takes_the_previous_subjects_place(previous, follow_up, expected):
    assert rewrite_fallback(follow_up, [previous]) == Rewrite(expected, "rules")


@pytest.mark.parametrize("previous, follow_up, expected", [
    ("E5续航多少？", "那价格呢？", "E5 价格"),
    ("电池保修多久？", "那价格呢？", "电池 价格"),
    ("E3续航多少？", "那E7的价格呢？", "E7 价格"),
    ("出差去杭州住宿能报多少？", "那伙食补助呢？", "出差去杭州 伙食 补助"),
])
def test_an_attribute_follow_up_is_asked_of_the_previous_subject_without_the_old_attribute(previous, follow_up, expected):
    assert rewrite_fallback(follow_up, [previous]) == Rewrite(expected, "rules")


def test_an_attribute_does_not_take_the_subjects_place():
    """「价格」 is what is asked, not a sibling of 电池: no 「价格保修多久」."""
    query = rewrite_fallback("那价格呢？", ["电池保修多久？"]).query
    assert not query.startswith("价格")
    assert "保修" not in query


def test_a_thing_of_another_kind_does_not_swap_a_common_noun():
    """A city is no sibling of a battery: the previous subject is carried instead (without its predicate)."""
    assert rewrite_fallback("那杭州呢？", ["电池保修多久？"]) == Rewrite("电池 杭州", "rules")


# Guards: the swap does not reach further than a noun of the same kind right before the predicate
# (these hold before the rule as well; they pin that it did not widen).
@pytest.mark.parametrize("previous, follow_up", [
    ("张伟负责哪个项目？", "那电池呢？"),        # 项目 is the object, not the subject before the predicate
    ("知库怎么备份数据？", "那怎么恢复呢？"),    # a verb is no sibling of 知库
])
def test_no_swap_without_a_noun_right_before_the_previous_predicate(previous, follow_up):
    rewrite = rewrite_fallback(follow_up, [previous])
    assert rewrite.method == "rules"
    assert rewrite.query.split()[0] == subject_of(previous)


def test_a_how_question_without_a_reference_word_and_no_clear_sibling_stands_as_asked():
    assert rewrite_fallback("知库怎么样？", ["年假有几天？"]) == Rewrite("知库怎么样？", "none")


def test_a_follow_up_asking_its_own_full_question_stands_as_asked():
    assert rewrite_fallback("那电机保修几年？", ["电池保修多久？"]) == Rewrite("那电机保修几年？", "none")


def test_the_subject_stops_at_the_attribute():
    assert subject_of("E5续航多少？") == "E5"
    assert subject_of("电池保修多久？") == "电池"


# --- model numbers and pronoun-led follow-ups (issue 34) --------------------------------------------------------

@pytest.mark.parametrize(("previous", "followup", "expected"), [
    ("XK-500 的主轴最高转速是多少？", "那 XK-800 呢？", "XK-800 的主轴最高转速是多少"),
    ("XK-500 的主轴最高转速是多少？", "XK-800呢？", "XK-800 的主轴最高转速是多少"),
    ("RO-400 的滤芯多久换一次？", "那 800 呢？", "RO-800 的滤芯多久换一次"),
    ("S10 的续航时间是多少？", "S20 的呢？", "S20 的续航时间是多少"),
    ("S20 的续航时间是多少？", "它多少钱？", "S20 多少钱"),
    ("Air13 的售价是多少？", "它重多少？", "Air13 重多少"),
    ("XK-500 的主轴最高转速是多少？", "那 XK-800 的功率呢？", "XK-800 功率"),
    ("What is the maximum spindle speed of the XK-500?", "what about XK-800?",
     "What is the maximum spindle speed of the XK-800"),
    ("How much does the XK-500 cost?", "how heavy is it?", "how heavy is XK-500"),
])
def test_follow_ups_keep_the_predicate_and_swap_the_model(previous, followup, expected):
    result = rewrite_fallback(followup, [previous])
    assert (result.query, result.method) == (expected, "rules")


def test_a_question_naming_its_own_model_stands_as_asked():
    result = rewrite_fallback("XK-800 的额定功率是多少？", ["XK-500 的主轴最高转速是多少？"])
    assert result.method == "none"


def test_an_unresolved_follow_up_is_never_answered_with_confidence():
    from types import SimpleNamespace

    from chat.answering import answer_plan
    from knowledge.retrieval.types import RetrievalResult

    turn = SimpleNamespace(answer=SimpleNamespace(faq_thresholds={}, max_sources=3, system_prompt=""),
                           not_found_text="", question="那呢？", history=[])
    result = RetrievalResult(hit=True, candidates=[], verdict="answered", relevance=0.9, threshold=0.12,
                             answer_threshold=0.7)
    assert answer_plan(turn, result, "那呢？", None).verdict == "answered"
    assert answer_plan(turn, result, "那呢？", None, unresolved_followup=True).verdict == "uncertain"
