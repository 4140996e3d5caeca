"""Context budget, citations, the extractive answerer, streaming pieces and the tool output format (no database)."""
from __future__ import annotations

from chat.llm import extractive_answer, pieces
from chat.prompts import (
    MAX_CHUNK_CHARS,
    SYSTEM_PROMPT,
    answer_messages,
    citations_map,
    cited_numbers,
    confidence_of,
    context_build,
)
from chat.tools import format_for_tool_output
from knowledge.retrieval.types import Candidate, RetrievalResult


def cand(i: int, content: str, *, relevance: float = 0.8, section=("知库专业版", "价格"), pages=(None, None)) -> Candidate:
    return Candidate(chunk_id=i, kb_id=1, document_id=10 + i, content=content, title="知库专业版", source_name="pro.md",
                     section_path=list(section), page_start=pages[0], page_end=pages[1], relevance=relevance)


PRICE = "知库专业版的价格为每年 9800 元，包含 20 个用户席位。超出的席位每个每年 300 元。"
FEATURES = "知库专业版支持多知识库检索、混合检索和命中测试。专业版还提供审计日志与单点登录。"


def test_each_chunk_is_capped_at_800_characters():
    ctx = context_build([cand(1, "长" * 2000)])
    assert len(ctx.sources[0].text) == MAX_CHUNK_CHARS


def test_chunks_past_the_budget_are_dropped_and_counted():
    ctx = context_build([cand(i, "字" * 700) for i in range(1, 20)], budget_chars=3000)
    assert len(ctx.text) <= 3000
    assert len(ctx.sources) == 4
    assert ctx.dropped == 15


def test_the_top_chunk_is_kept_even_when_it_alone_is_over_budget():
    ctx = context_build([cand(1, "字" * 800)], budget_chars=300)
    assert len(ctx.sources) == 1
    assert len(ctx.text) <= 300


def test_sources_are_numbered_with_their_section_and_pages():
    ctx = context_build([cand(1, PRICE, pages=(3, 4))])
    assert ctx.text.startswith("[1] 来源：知库专业版 › 价格（第 3–4 页）\n知库专业版的价格")


def test_prompt_confines_the_answer_to_the_sources():
    ctx = context_build([cand(1, PRICE)])
    messages = answer_messages(question="那它的价格呢？", standalone="知库专业版 价格", context=ctx,
                               history=[("user", "知库专业版有哪些功能？"), ("assistant", "……")])
    assert messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert "严格依据" in SYSTEM_PROMPT and "[1]" in SYSTEM_PROMPT
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert "知库专业版 价格" in messages[-1]["content"] and PRICE in messages[-1]["content"]


def test_citation_forms_are_read_in_order_of_first_use():
    assert cited_numbers("甲[2]乙[1][2]丙【3】丁[1, 4]") == [2, 1, 3, 4]


def test_citations_map_numbers_to_chunks_and_ignore_unknown_numbers():
    ctx = context_build([cand(1, PRICE), cand(2, FEATURES)])
    citations = citations_map("价格是 9800 元[1]，另见[7]。", ctx.sources)
    assert [(c["n"], c["chunk_id"]) for c in citations] == [(1, 1)]
    assert citations[0]["section_path"] == ["知库专业版", "价格"]


def test_confidence_is_the_mean_relevance_of_cited_sources():
    ctx = context_build([cand(1, PRICE, relevance=0.9), cand(2, FEATURES, relevance=0.3)])
    assert confidence_of(ctx.sources, citations_map("[1]", ctx.sources)) == 0.9
    assert confidence_of(ctx.sources, []) == 0.6


def test_extractive_answer_picks_matching_sentences_with_markers():
    ctx = context_build([cand(1, "## 价格\n\n" + PRICE), cand(2, FEATURES)])
    answer = extractive_answer("知库专业版 价格", ctx.sources)
    assert answer == "知库专业版的价格为每年 9800 元，包含 20 个用户席位。超出的席位每个每年 300 元。[1]"


def test_extractive_answer_without_overlap_uses_the_top_source():
    ctx = context_build([cand(1, PRICE)])
    assert extractive_answer("zzz", ctx.sources).endswith("[1]")


def test_pieces_rebuild_the_text_and_never_split_a_citation():
    text = "知库专业版的价格为每年 9800 元。[1]\n\n超出的席位[2]"
    parts = pieces(text)
    assert "".join(parts) == text
    assert "[1]" in parts and "[2]" in parts
    assert max(len(p) for p in parts) <= 4


def test_tool_output_is_numbered_with_source_section_and_page():
    result = RetrievalResult(hit=True, candidates=[cand(1, PRICE, pages=(3, 3)), cand(2, FEATURES)], relevance=0.9)
    out = format_for_tool_output(result)
    assert out["hit"] is True
    assert "[1] 来源：知库专业版 › 价格（第 3 页）" in out["content"]
    assert "[2] 来源：" in out["content"]
    assert out["results"][0] == {
        "n": 1, "chunk_id": 1, "kb_id": 1, "source": "pro.md", "title": "知库专业版", "section": "知库专业版 > 价格",
        "section_path": ["知库专业版", "价格"], "page": 3, "page_end": 3, "content": PRICE, "relevance": 0.8,
    }


def test_tool_output_when_not_found_has_no_passages():
    out = format_for_tool_output(RetrievalResult(hit=False, candidates=[cand(1, PRICE)], not_found_text="没有找到。"))
    assert out["results"] == [] and "没有找到。" in out["content"]
