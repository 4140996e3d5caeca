"""Tests for knowledge.retrieval.analysis: normalisation, tokens, KB dictionaries, synonyms."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jieba
import pytest
from opencc import OpenCC

from knowledge.retrieval.analysis import (
    Analyzer,
    AnalyzerConfig,
    get_analyzer,
    single_char_filtered,
    to_simplified,
)
from knowledge.retrieval.stopwords import STOPWORDS

BENCH = Path(os.environ.get("ZHIKU_BENCH_DIR", Path(__file__).resolve().parents[3].parent / "shared" / "bench"))


@pytest.fixture(scope="module")
def analyzer() -> Analyzer:
    return get_analyzer(AnalyzerConfig())


def test_normalize_folds_width_case_and_traditional(analyzer):
    assert analyzer.normalize("ＡＢＣ１２３ Ｈｅｌｌｏ") == "abc123 hello"
    assert analyzer.normalize("網球起源於英格蘭") == "网球起源于英格兰"


def test_normalize_keeps_traditional_when_folding_is_off():
    assert Analyzer(AnalyzerConfig(fold_traditional=False)).normalize("網球") == "網球"


@pytest.mark.parametrize(
    "text",
    ["乾淨的乾坤", "一目瞭然，不瞭解", "隔著球網", "著作權", "頭髮與發現", "後來的麵包", "儘管如此"],
)
def test_to_simplified_matches_opencc_on_phrases(text):
    assert to_simplified(text) == OpenCC("t2s").convert(text)


def test_to_simplified_matches_opencc_on_real_traditional_passages():
    path = BENCH / "drcd" / "dev" / "corpus.jsonl"
    if not path.exists():
        pytest.skip(f"bench data not found at {path}")
    with path.open(encoding="utf-8") as fh:
        texts = [json.loads(line)["text"] for _, line in zip(range(40), fh, strict=False)]
    converter = OpenCC("t2s")
    assert [to_simplified(t) for t in texts] == [converter.convert(t) for t in texts]


def test_tokenize_drops_stop_words_and_punctuation(analyzer):
    # Question words and particles go, content words stay.
    assert analyzer.tokenize("这个项目可以做什么") == ["项目", "做"]
    assert analyzer.tokenize("后端用了什么框架？") == ["后端", "用", "框架"]
    assert analyzer.tokenize("  ，。！？…… ---  ") == []


def test_tokenize_lowercases_english_and_keeps_numbers(analyzer):
    assert analyzer.tokenize("The Quick brown FOX is in 1890年") == ["quick", "brown", "fox", "1890", "年"]


def test_tokenize_keeps_identifiers_whole_and_in_parts(analyzer):
    assert analyzer.tokenize("ERR_1042 是什么错误") == ["err_1042", "err", "1042", "错误"]
    assert analyzer.tokenize("ＳＫＵ-123") == ["sku-123", "sku", "123"]
    # Plain numbers with dots stay whole: 3.14 is not "3" and "14".
    assert analyzer.tokenize("圆周率3.14") == ["圆周率", "3.14"]


def test_traditional_and_simplified_give_the_same_tokens(analyzer):
    assert analyzer.tokenize("網球現在是一項奧運會比賽項目") == analyzer.tokenize("网球现在是一项奥运会比赛项目")


def test_query_tokens_equal_tokenize(analyzer):
    text = "莱昂德罗·内托曾效力过哪些球队？"
    assert analyzer.query_tokens(text) == analyzer.tokenize(text)


def test_stop_word_list_covers_seed_004():
    assert len(STOPWORDS) > 50
    for word in ["的", "了", "是", "可以", "什么", "怎么", "如何", "哪些", "吗", "the", "is"]:
        assert word in STOPWORDS


def test_user_words_segment_whole_in_their_kb_only():
    kb = get_analyzer(AnalyzerConfig(user_words=("知库平台",)))
    other = get_analyzer(AnalyzerConfig(user_words=("别的词",)))
    default = get_analyzer(AnalyzerConfig())
    assert kb.tokenize("知库平台怎么用") == ["知库平台", "用"]
    assert "知库平台" not in other.tokenize("知库平台怎么用")
    assert "知库平台" not in default.tokenize("知库平台怎么用")
    assert "知库平台" not in jieba.lcut("知库平台怎么用")


def test_user_words_are_normalised_like_text():
    kb = Analyzer(AnalyzerConfig(user_words=("資料湖倉",)))
    assert kb.tokenize("我们的资料湖仓") == ["资料湖仓"]


def test_synonyms_map_to_the_first_member_on_both_sides():
    kb = Analyzer(AnalyzerConfig(synonyms=(("向量数据库", "向量库", "VectorDB"),)))
    assert kb.tokenize("向量库和VectorDB") == ["向量数据库", "向量数据库"]
    assert kb.query_tokens("什么是向量数据库") == ["向量数据库"]


def test_named_words_are_not_dropped_as_stop_words():
    kb = Analyzer(AnalyzerConfig(synonyms=(("可以", "能够"),)))
    assert kb.tokenize("能够") == ["可以"]


def test_fingerprint_is_stable_and_tracks_the_config():
    base = AnalyzerConfig(user_words=("甲乙", "丙丁"))
    assert Analyzer(base).fingerprint == Analyzer(AnalyzerConfig(user_words=("丙丁", "甲乙"))).fingerprint
    others = {
        Analyzer(AnalyzerConfig()).fingerprint,
        Analyzer(base).fingerprint,
        Analyzer(AnalyzerConfig(user_words=("甲乙",))).fingerprint,
        Analyzer(AnalyzerConfig(synonyms=(("甲乙", "丙丁"),))).fingerprint,
        Analyzer(AnalyzerConfig(fold_traditional=False)).fingerprint,
    }
    assert len(others) == 5


def test_get_analyzer_caches_per_config():
    config = AnalyzerConfig(user_words=("缓存测试词",))
    assert get_analyzer(config) is get_analyzer(AnalyzerConfig(user_words=("缓存测试词",)))
    assert get_analyzer(config) is not get_analyzer(AnalyzerConfig())


def test_single_char_filtered_drops_one_character_tokens():
    assert single_char_filtered(["项目", "做", "a", "api", "年"]) == ["项目", "api"]


def test_the_traditional_gate_lets_every_phrase_through_and_skips_simplified_text():
    """The converter skips a text holding none of its gate's characters: safe only if every phrase it would change
    holds one (沈默 holds no single-character key, and became 沉默 only beside another traditional character)."""
    from knowledge.retrieval.analysis import _t2s

    t2s = _t2s()
    assert all(not t2s._trad_chars.isdisjoint(key) for key, value in t2s._phrases.items() if key != value)
    assert t2s("他沈默了") == OpenCC("t2s").convert("他沈默了") == "他沉默了"
    simplified = "知库专业版的价格是每月一百元，企业版请联系销售。"
    assert t2s._trad_chars.isdisjoint(simplified) and t2s(simplified) is simplified
    assert t2s("專業版的價格") == "专业版的价格"
