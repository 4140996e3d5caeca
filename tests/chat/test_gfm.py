"""Table rows made GFM tables (chat/gfm.py), read back by markdown-it-py's GFM table rule; and the extractive answer's
row quoted alone, under the header its table chunk records."""
from __future__ import annotations

import asyncio
import random

import pytest

from chat.gfm import TableFixer, fix_tables, gfm_stream
from tests.chat.test_extractive import answer, cand
from tests.gfm import gfm_html, gfm_tables


def streamed(text: str, seed: int) -> str:
    """``text`` through a ``TableFixer`` in deltas cut at random places."""
    rng = random.Random(seed)
    fixer, out, i = TableFixer(), [], 0
    while i < len(text):
        j = i + rng.randint(1, 7)
        out.append(fixer.feed(text[i:j]))
        i = j
    return "".join(out) + fixer.flush()


CASES = [
    # (as written, tables GFM reads in the fixed text)
    ("标准如下：\n| 职级 | 一类 |\n| 总监 | 700 |\n| 经理 | 550 |[1]\n超出部分自理。",
     [[["职级", "一类"], ["总监", "700"], ["经理", "550[1]"]]]),
    ("| a | b |\n| :-: | --- |\n| 1 | 2 |", [[["a", "b"], ["1", "2"]]]),
    ("| 型号 | 价格 |【2】", [[["型号", "价格【2】"]]]),
    ("前文\n\n| a | b |\n|---|\n| 1 | 2 |\n\n后文", [[["a", "b"], ["1", "2"]]]),
    ("| a | b |\n| 1 | 2 |\n\n| c | d |\n| 3 | 4 |", [[["a", "b"], ["1", "2"]], [["c", "d"], ["3", "4"]]]),
    ("```\n| not | a table |\n```\n| x | y |\n| 1 | 2 |", [[["x", "y"], ["1", "2"]]]),
    ("没有表格的答案[1]。\n第二行。", []),
    ("| 只有一个竖线", []),
]


@pytest.mark.parametrize("text, tables", CASES)
def test_rows_become_gfm_tables_whole_or_streamed_in_any_pieces(text, tables):
    fixed = fix_tables(text)
    assert gfm_tables(fixed) == tables
    assert all(streamed(text, seed) == fixed for seed in range(5))
    assert fix_tables(fixed) == fixed  # a valid table is left as it is


def test_text_around_a_table_stays_text_and_a_fenced_block_stays_code():
    fixed = fix_tables(CASES[0][0])
    html = gfm_html(fixed)
    assert "<p>标准如下：</p>" in html and "<p>超出部分自理。</p>" in html  # not swallowed as a row
    code = gfm_html(fix_tables(CASES[5][0]))
    assert "<pre><code>| not | a table |\n</code></pre>" in code
    assert fix_tables("没有表格的答案[1]。\n第二行。") == "没有表格的答案[1]。\n第二行。"


def test_the_stream_closes_its_source_when_it_is_closed():
    closed = []

    async def source():
        try:
            for piece in ["| a | b |\n", "| 1 | 2 |\n", "正文"]:
                yield piece
        finally:
            closed.append(True)

    async def first_only():
        stream = gfm_stream(source())
        first = await stream.__anext__()
        await stream.aclose()
        return first

    assert asyncio.run(first_only()) == "| a | b |\n| --- | --- |\n| 1 | 2 |\n"  # the header waits for the next line
    assert closed == [True]


def test_a_row_quoted_alone_gets_the_header_its_table_chunk_records():
    """A table chunk holding one body row (the header in its columns metadata): the row under that header."""
    row = cand(1, "| 车架 | 3年 | 非人为断裂免费更换 |", chunk_type="table",
               metadata={"columns": ["部件", "保修期", "说明"]})
    got = answer("车架保修几年？", row)
    assert gfm_tables(got) == [[["部件", "保修期", "说明"], ["车架", "3年", "非人为断裂免费更换[1]"]]]
    bare = answer("车架保修几年？", cand(1, "| 车架 | 3年 | 非人为断裂免费更换 |"))
    assert gfm_tables(bare) == [[["车架", "3年", "非人为断裂免费更换[1]"]]]  # no header known: the row heads it
