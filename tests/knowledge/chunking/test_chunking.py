"""Tests for knowledge.chunking: sections, merging, sentence splitting, tables, FAQ, overlap and enriched text."""
from __future__ import annotations

import re

import pytest

from knowledge.chunking import ChunkDraft, ChunkingConfig, chunk_document, split_sentences
from knowledge.parsers import Block, ParsedDocument
from knowledge.parsers.blocks import markdown_table


def _doc(*blocks: Block, title: str = "员工手册") -> ParsedDocument:
    return ParsedDocument(title=title, doc_type="markdown", blocks=list(blocks), metadata={})


def _h(text: str, level: int, page: int | None = None) -> Block:
    return Block(kind="heading", text=text, level=level, page=page)


def _t(text: str, page: int | None = None, **meta: object) -> Block:
    return Block(kind="text", text=text, page=page, meta=dict(meta))


def _no_space(text: str) -> str:
    return re.sub(r"\s+", "", text)


SENTENCES = [f"第{i}条规定说明员工在第{i}种情况下应当如何处理相关事务。" for i in range(1, 41)]


# --- split_sentences -------------------------------------------------------------------------


def test_split_sentences_keeps_punctuation_and_closing_quotes() -> None:
    text = "你好。世界！“真的吗？”他问；Really? Yes! Pi is 3.14 here. 最后一句\n新的一行"
    assert split_sentences(text) == [
        "你好。", "世界！", "“真的吗？”", "他问；", "Really?", "Yes!", "Pi is 3.14 here.", "最后一句", "新的一行"
    ]


def test_split_sentences_of_empty_text() -> None:
    assert split_sentences("  \n ") == []


# --- sections --------------------------------------------------------------------------------


def test_section_path_follows_the_heading_stack() -> None:
    doc = _doc(
        _t("序言部分的说明文字。"),
        _h("第一章", 1), _t("第一章正文。"),
        _h("1.1 范围", 2), _t("范围正文。"),
        _h("1.1.1 细则", 3), _t("细则正文。"),
        _h("1.2 定义", 2), _t("定义正文。"),
        _h("第二章", 1), _t("第二章正文。"),
    )
    chunks = chunk_document(doc)
    assert [(c.content, c.section_path) for c in chunks] == [
        ("序言部分的说明文字。", []),
        ("第一章正文。", ["第一章"]),
        ("范围正文。", ["第一章", "1.1 范围"]),
        ("细则正文。", ["第一章", "1.1 范围", "1.1.1 细则"]),
        ("定义正文。", ["第一章", "1.2 定义"]),
        ("第二章正文。", ["第二章"]),
    ]
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))


def test_no_chunk_is_only_a_heading() -> None:
    doc = _doc(
        _h("员工手册", 1),  # the document's title: no chunk of its own
        _h("第一章", 1),  # has a subsection: no chunk of its own
        _h("1.1 空小节", 2),  # closed by a sibling with no body: into the next chunk
        _h("1.2 小节", 2), _t("正文。"),
        _h("附录", 1),  # last section, empty: into the last chunk
    )
    chunks = chunk_document(doc)
    assert [(c.chunk_type, c.content, c.section_path) for c in chunks] == [
        ("text", "1.1 空小节\n正文。\n附录", ["第一章", "1.2 小节"]),
    ]
    assert chunks[0].metadata["heading_chars"] == len("1.1 空小节\n")
    assert chunks[0].enriched == "员工手册\n主题：第一章 > 1.2 小节\n1.1 空小节\n正文。\n附录"


def test_a_document_of_headings_only_keeps_them_as_its_text() -> None:
    chunks = chunk_document(_doc(_h("第一章", 1), _h("第二章", 1)))
    assert [(c.chunk_type, c.content) for c in chunks] == [("heading", "第一章\n第二章")]


# --- merging and splitting -------------------------------------------------------------------


def test_small_blocks_in_one_section_merge_in_order() -> None:
    doc = _doc(_h("制度", 1), _t("第一句。"), _t("第二句。"), _t("第三句。"), _h("其他", 1), _t("另一节。"))
    chunks = chunk_document(doc)
    assert [c.content for c in chunks] == ["第一句。\n第二句。\n第三句。", "另一节。"]


def test_small_fragment_never_merges_across_sections() -> None:
    doc = _doc(_h("甲", 1), _t("短。"), _h("乙", 1), _t("也短。"))
    chunks = chunk_document(doc, ChunkingConfig(min_chars=80))
    assert [(c.content, c.section_path) for c in chunks] == [("短。", ["甲"]), ("也短。", ["乙"])]


def test_long_text_splits_at_sentence_ends_within_max_chars() -> None:
    text = "".join(SENTENCES)
    config = ChunkingConfig(min_chars=20, max_chars=120)
    chunks = chunk_document(_doc(_h("规定", 1), _t(text)), config)
    assert len(chunks) > 1
    for chunk in chunks:
        assert len(chunk.content) <= 120
        assert chunk.content.endswith("。")
        assert all(sentence in SENTENCES for sentence in split_sentences(chunk.content))
    assert "".join(c.content for c in chunks) == text


def test_single_sentence_longer_than_max_is_hard_split_without_loss() -> None:
    sentence = "这是一个没有任何句号的超长句子" * 30  # 450 characters, no punctuation
    chunks = chunk_document(_doc(_t(sentence)), ChunkingConfig(min_chars=10, max_chars=100))
    assert all(len(c.content) <= 100 for c in chunks)
    assert "".join(c.content for c in chunks) == sentence


def test_hard_split_prefers_a_comma() -> None:
    sentence = "甲" * 70 + "，" + "乙" * 70
    chunks = chunk_document(_doc(_t(sentence)), ChunkingConfig(min_chars=10, max_chars=100))
    assert [c.content for c in chunks] == ["甲" * 70 + "，", "乙" * 70]


def test_short_tail_borrows_sentences_from_the_chunk_before() -> None:
    # Greedy packing alone would leave "结尾。" as a 3-character chunk.
    text = "".join(SENTENCES[:4]) + "结尾。"
    per_sentence = len(SENTENCES[0])
    config = ChunkingConfig(min_chars=20, max_chars=4 * per_sentence + 2)
    chunks = chunk_document(_doc(_t(text)), config)
    assert [len(c.content) >= 20 for c in chunks] == [True, True]
    assert chunks[1].content.endswith("结尾。")
    assert "".join(c.content for c in chunks) == text


def test_blocks_with_different_meta_do_not_merge() -> None:
    doc = _doc(_t("记录一。", id=1), _t("记录二。", id=2), _t("记录二续。", id=2))
    chunks = chunk_document(doc)
    assert [(c.content, c.metadata) for c in chunks] == [("记录一。", {"id": 1}), ("记录二。\n记录二续。", {"id": 2})]


def test_pages_span_the_merged_blocks() -> None:
    doc = _doc(_h("Intro", 1, page=1), _t("Page one text.", page=1), _t("Page two text.", page=2), _t("More.", page=3))
    chunks = chunk_document(doc)
    assert [(c.page_start, c.page_end) for c in chunks] == [(1, 3)]
    split = chunk_document(doc, ChunkingConfig(min_chars=0, max_chars=30))
    assert [(c.content, c.page_start, c.page_end) for c in split] == [
        ("Page one text.\nPage two text.", 1, 2),
        ("More.", 3, 3),
    ]


# --- overlap ---------------------------------------------------------------------------------


def test_overlap_repeats_whole_tail_sentences_within_limits() -> None:
    text = "".join(SENTENCES[:12])
    per_sentence = len(SENTENCES[0])
    config = ChunkingConfig(min_chars=10, max_chars=4 * per_sentence, overlap_chars=per_sentence + 5)
    chunks = chunk_document(_doc(_t(text)), config)
    assert len(chunks) >= 3
    for before, after in zip(chunks, chunks[1:], strict=False):
        tail = split_sentences(before.content)[-1]
        assert after.content.startswith(tail)
        assert after.metadata["overlap_chars"] == len(tail)
    assert all(len(c.content) <= config.max_chars for c in chunks)
    assert "overlap_chars" not in chunks[0].metadata
    # Dropping each overlap gives back the text once, in order.
    rebuilt = chunks[0].content + "".join(c.content[c.metadata["overlap_chars"]:] for c in chunks[1:])
    assert rebuilt == text


def test_no_overlap_by_default() -> None:
    chunks = chunk_document(_doc(_t("".join(SENTENCES))), ChunkingConfig(max_chars=200))
    assert "".join(c.content for c in chunks) == "".join(SENTENCES)


# --- tables ----------------------------------------------------------------------------------


def _table(rows: list[tuple[str, ...]], **meta: object) -> Block:
    frozen = tuple(tuple(r) for r in rows)
    return Block(kind="table", text=markdown_table(frozen), rows=frozen, page=4, meta=dict(meta))


def test_small_table_is_one_chunk_with_enriched_fields() -> None:
    table = _table([("套餐", "价格"), ("基础版", "免费"), ("专业版", "99 元")], caption="价格表")
    chunks = chunk_document(_doc(_h("费用", 1), _h("价格", 2), table))
    assert len(chunks) == 1
    chunk = chunks[0]
    assert chunk.chunk_type == "table"
    assert chunk.content == table.text
    assert chunk.enriched == f"主题：费用 > 价格\n表格：价格表\n字段：套餐、价格\n\n{table.text}"
    assert (chunk.page_start, chunk.page_end) == (4, 4)
    assert chunk.metadata["columns"] == ["套餐", "价格"]
    assert chunk.metadata["row_count"] == 2


def test_table_without_section_or_caption_omits_those_lines() -> None:
    table = _table([("a", "b"), ("1", "2")])
    assert chunk_document(_doc(table))[0].enriched == f"字段：a、b\n\n{table.text}"


def test_large_table_splits_by_rows_repeating_the_header() -> None:
    rows = [("编号", "名称", "说明")] + [(str(i), f"名称{i}", "说明文字" * 5) for i in range(60)]
    table = _table(rows)
    config = ChunkingConfig(table_max_chars=500)
    chunks = chunk_document(_doc(table), config)
    assert len(chunks) > 1
    header = table.text.splitlines()[:2]
    body = []
    for number, chunk in enumerate(chunks, start=1):
        lines = chunk.content.splitlines()
        assert lines[:2] == header
        assert len(chunk.content) <= 500
        assert chunk.metadata["part"] == number and chunk.metadata["parts"] == len(chunks)
        assert chunk.enriched.startswith("字段：编号、名称、说明\n\n| 编号 |")
        body.extend(lines[2:])
    assert body == table.text.splitlines()[2:]


def test_a_table_chunk_is_no_longer_than_what_an_answer_is_given_of_a_chunk() -> None:
    """chat.prompts cuts every chunk to 800 characters for the answer: a table chunk longer would hide its last rows."""
    from chat.prompts import MAX_CHUNK_CHARS

    rows = [("名称", "描述", "默认值")] + [(f"param{i}", "参数的说明文字" * 3, str(i)) for i in range(40)]
    chunks = chunk_document(_doc(_table(rows)))
    assert len(chunks) > 1
    assert all(len(c.content) <= MAX_CHUNK_CHARS for c in chunks)
    assert "| param39 |" in chunks[-1].content


def test_text_around_a_table_is_not_merged_across_it() -> None:
    table = _table([("a", "b"), ("1", "2")])
    chunks = chunk_document(_doc(_t("表前。"), table, _t("表后。")))
    assert [c.chunk_type for c in chunks] == ["text", "table", "text"]


def test_a_table_in_the_text_split_over_chunks_gives_every_chunk_its_header_and_caption() -> None:
    """Rows 「| a | b |」 in text (a TXT file, a Markdown table without its rule): the chunks after the first open
    with the table's header row, and carry the line before the table as its caption."""
    rows = "\n".join(f"| 部件{i} | {i} 年 | 说明文字{'甲' * 20} |" for i in range(30))
    text = f"本公司对整车各部件提供质保服务，详见下表。各部件保修期限如下\n| 部件 | 保修期 | 说明 |\n{rows}\n以上期限自购车之日起计算。"
    config = ChunkingConfig(min_chars=20, max_chars=300)
    chunks = chunk_document(_doc(_h("售后", 1), _t(text)), config)
    assert len(chunks) >= 3
    assert "| 部件 | 保修期 | 说明 |" in chunks[0].content and "table_header_chars" not in chunks[0].metadata
    body = []
    for chunk in chunks[1:]:
        lines = chunk.content.splitlines()
        if lines[0] != "| 部件 | 保修期 | 说明 |":
            assert not lines[0].startswith("|")  # only a chunk that opens inside the table gets the header
            continue
        assert chunk.metadata["table_header_chars"] == len(lines[0]) + 1
        assert chunk.metadata["caption"] == "本公司对整车各部件提供质保服务，详见下表。各部件保修期限如下"
        assert "\n表格：本公司对整车各部件提供质保服务，详见下表。各部件保修期限如下\n| 部件 | 保修期 | 说明 |\n" in chunk.enriched
        assert len(chunk.content) <= config.max_chars
        body.extend(lines[1:])
    assert len([c for c in chunks if c.metadata.get("table_header_chars")]) >= 2
    # No row is lost or doubled: the rows of every chunk, header lines left out, are the text's rows in order.
    all_rows = [ln for c in chunks for ln in c.content.splitlines()[1 if c.metadata.get("table_header_chars") else 0:]
                if ln.startswith("| 部件") and ln != "| 部件 | 保修期 | 说明 |"]
    assert all_rows == rows.splitlines()


def test_a_continued_text_table_keeps_its_rule_line_with_the_header() -> None:
    rows = "\n".join(f"| k{i} | v{i} {'说明' * 10} |" for i in range(20))
    chunks = chunk_document(_doc(_t(f"| 名称 | 默认值 |\n| --- | --- |\n{rows}")), ChunkingConfig(min_chars=20, max_chars=200))
    assert len(chunks) > 1
    assert all(c.content.startswith("| 名称 | 默认值 |\n| --- | --- |\n| k") for c in chunks)
    assert all("caption" not in c.metadata for c in chunks)  # nothing before the table


def test_a_table_block_takes_the_short_line_before_it_as_its_caption() -> None:
    table = _table([("部件", "保修期"), ("车架", "3 年"), ("锂电池", "2 年")])
    chunks = chunk_document(_doc(_t("购车须知见第二章。\n表 2 各部件保修期限"), table))
    assert chunks[1].metadata["caption"] == "表 2 各部件保修期限"
    assert chunks[1].enriched.startswith("表格：表 2 各部件保修期限\n字段：部件、保修期")
    long_line = "这是一段很长的说明文字。" * 10 + "保修期限如下："
    assert chunk_document(_doc(_t(long_line), table))[1].metadata["caption"] == "保修期限如下："
    assert "caption" not in chunk_document(_doc(_t("这是一段很长的说明文字，" * 10), table))[1].metadata


# --- FAQ -------------------------------------------------------------------------------------


def test_each_faq_block_is_one_chunk() -> None:
    faqs = [
        Block(kind="faq", text="问：怎么退款？\n答：联系客服。",
              meta={"question": "怎么退款？", "answer": "联系客服。", "row": 2}),
        Block(kind="faq", text="问：几点上班？\n答：九点。",
              meta={"question": "几点上班？", "answer": "九点。", "row": 3}),
    ]
    chunks = chunk_document(_doc(*faqs, title="客服问答"))
    assert [c.chunk_type for c in chunks] == ["faq", "faq"]
    assert chunks[0].content == "问：怎么退款？\n答：联系客服。"
    assert chunks[0].enriched == "客服问答\n问：怎么退款？\n答：联系客服。"
    assert chunks[1].metadata == {"question": "几点上班？", "answer": "九点。", "row": 3}


# --- enriched text ---------------------------------------------------------------------------


def test_enriched_text_truncates_the_section_path() -> None:
    doc = _doc(_h("一", 1), _h("二", 2), _h("三", 3), _h("四", 4), _t("正文内容。"))
    chunk = chunk_document(doc)[0]
    assert chunk.section_path == ["一", "二", "三", "四"]
    assert chunk.enriched == "员工手册\n主题：一 > 二 > 三\n正文内容。"
    deeper = chunk_document(doc, ChunkingConfig(section_depth_in_enriched=4))[0]
    assert deeper.enriched == "员工手册\n主题：一 > 二 > 三 > 四\n正文内容。"


def test_enriched_text_without_section_has_no_topic_line() -> None:
    assert chunk_document(_doc(_t("正文。")))[0].enriched == "员工手册\n正文。"


# --- whole documents -------------------------------------------------------------------------


def test_chinese_text_survives_chunking_character_for_character() -> None:
    paragraphs = ["".join(SENTENCES[i:i + 7]) for i in range(0, 40, 7)] + ["结尾短句。"]
    doc = _doc(_h("总则", 1), *[_t(p) for p in paragraphs])
    chunks = chunk_document(doc, ChunkingConfig(min_chars=50, max_chars=150))
    assert _no_space("".join(c.content for c in chunks)) == _no_space("".join(paragraphs))
    assert all(len(c.content) <= 150 for c in chunks)
    assert all(isinstance(c, ChunkDraft) and c.section_path == ["总则"] for c in chunks)


def test_empty_blocks_are_ignored_and_empty_document_gives_no_chunks() -> None:
    assert chunk_document(_doc()) == []
    assert [c.content for c in chunk_document(_doc(_t("  "), _t("内容。"), _t("\n")))] == ["内容。"]


@pytest.mark.parametrize(
    "values",
    [
        {"max_chars": 0},
        {"min_chars": 900},
        {"overlap_chars": 800},
        {"overlap_chars": -1},
        {"section_depth_in_enriched": -1},
    ],
)
def test_invalid_config_is_rejected(values: dict) -> None:
    with pytest.raises(ValueError):
        ChunkingConfig(**values)


def test_a_table_known_only_by_its_markdown_is_split_by_rows_with_its_header():
    # A table block may carry its Markdown without parsed rows: the header is
    # read from the Markdown itself.
    body = "\n".join(f"| 型号{i} | {i * 100} 元 |" for i in range(60))
    table = Block(kind="table", text="| 型号 | 价格 |\n|---|---|\n" + body)
    chunks = chunk_document(_doc(table), ChunkingConfig(table_max_chars=300))
    assert len(chunks) > 1 and all(c.chunk_type == "table" for c in chunks)
    assert all(c.content.startswith("| 型号 | 价格 |\n|---|---|\n") for c in chunks)
    assert [line for c in chunks for line in c.content.split("\n")[2:]] == body.split("\n")
