"""Evidence for the judge: reference token weights, sentence windows, the cosine background."""
from __future__ import annotations

import numpy as np
import pytest

from knowledge.retrieval import evidence


def test_interrogatives_weigh_nothing_and_unknown_words_weigh_the_median():
    table, median = evidence.reference_idf()
    assert evidence.token_weight("多久") == 0.0
    assert evidence.token_weight("保修") == pytest.approx(table["保修"])
    assert evidence.token_weight("zhiku专业版xyz") == pytest.approx(median)
    assert evidence.token_weight("的") < evidence.token_weight("保修")


def test_a_one_sentence_answer_covers_the_question_whatever_the_kb_size():
    ev = evidence.passage_evidence(["电池", "保修", "多久"], "本产品整机保修两年，电池保修一年。")
    assert ev.coverage == 1.0 and ev.missing == 0.0 and ev.token_share == 1.0


def test_words_scattered_over_distant_sentences_cover_less_than_words_together():
    tokens = ["北京", "住宿", "标准"]
    together = "出差北京的住宿标准为每晚六百元。其他城市另行规定。差旅需审批。"
    scattered = "北京分公司成立于2010年。公司提倡节约。员工食堂提供午餐。住宿须选择协议酒店。报销按标准执行。"
    a = evidence.passage_evidence(tokens, together)
    b = evidence.passage_evidence(tokens, scattered)
    assert a.coverage == 1.0 and b.coverage < a.coverage
    assert b.token_share == 1.0  # the whole passage has every word; only the window tells them apart


def test_the_heading_belongs_to_every_window():
    ev = evidence.passage_evidence(["退货", "运费"], "运费由买家承担。", heading="退货政策")
    assert ev.coverage == 1.0


def test_missing_names_the_heaviest_lacking_word():
    ev = evidence.passage_evidence(["飞书", "告警"], "告警支持邮件和钉钉。")
    assert ev.missing == pytest.approx(evidence.token_weight("飞书") / max(evidence.token_weight("飞书"), evidence.token_weight("告警")))
    assert 0 < ev.coverage < 1


def test_no_content_tokens_means_no_lexical_evidence():
    ev = evidence.passage_evidence(["多久", "咋办"], "随便什么内容。")
    assert ev == evidence.LexicalEvidence(None, None, None)


def test_background_z_measures_a_cosine_against_the_query_own_background():
    bank = np.eye(4, dtype=np.float32)
    q = np.array([1.0, 1.0, 0.0, 0.0], dtype=np.float32)
    bg = evidence.query_background(q, bank)
    sims = bank @ (q / np.linalg.norm(q))
    assert bg.mean == pytest.approx(float(sims.mean())) and bg.spread == pytest.approx(float(sims.std()))
    assert bg.z(0.9) > bg.z(0.5) and bg.z(None) is None


def test_background_vectors_are_computed_once_per_model():
    calls = []

    def encode(texts):
        calls.append(len(texts))
        return np.ones((len(texts), 3), dtype=np.float32)

    background = evidence.Background()
    a = background.vectors("m", encode)
    b = background.vectors("m", encode)
    assert a is b and calls == [len(evidence.background_texts())]
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0)
    assert background.vectors("other", None) is None


def test_the_banks_ship_with_the_project():
    assert len(evidence.background_texts()) >= 100
