"""Feishu docx blocks → Markdown (sources/kinds/feishu_blocks.py), on block lists shaped as the docx API answers them."""
from __future__ import annotations

from sources.kinds.feishu_blocks import to_markdown
from tests.sources.feishu_server import docx_blocks


def _run(content, **style):
    return {"text_run": {"content": content, "text_element_style": style}}


def test_styles_links_and_mentions_inline():
    blocks = docx_blocks("doc1", "样式", [("p", "x")])
    blocks[1]["text"]["elements"] = [
        _run("粗体", bold=True), _run(" 和 "), _run("代码", inline_code=True), _run(" "),
        _run("链接", link={"url": "https%3A%2F%2Fexample.com%2Fa%20b"}), _run(" "), _run("删除", strikethrough=True),
        {"mention_doc": {"title": "另一篇", "url": "https://example.feishu.cn/docx/abc", "obj_type": 22}},
        {"equation": {"content": "E=mc^2\n"}},
        {"mention_user": {"user_id": "ou_1"}},
    ]
    _, text = to_markdown(blocks)
    assert ("**粗体** 和 `代码` [链接](https://example.com/a%20b) ~~删除~~"
            "[另一篇](https://example.feishu.cn/docx/abc)$E=mc^2$") in text


def test_code_quote_todo_divider_ordered_and_deep_headings():
    blocks = docx_blocks("doc2", "杂项", [
        ("code", "print('a|b')\n# not a heading"), ("quote", "引用的话"), ("todo", "已完成", True),
        ("todo", "未完成", False), ("divider",), ("ordered", "一", [("ordered", "一点一")]), ("ordered", "二"),
        ("h9", "第九级"), ("p", "a|b *星号*")])
    title, text = to_markdown(blocks)
    assert title == "杂项"
    assert "```\nprint('a|b')\n# not a heading\n```" in text
    assert "> 引用的话" in text
    assert "- [x] 已完成\n- [ ] 未完成" in text
    assert "\n---\n" in text
    assert "1. 一\n    1. 一点一\n1. 二" in text
    assert "\n###### 第九级\n" in text
    assert "a\\|b \\*星号\\*" in text


def test_empty_document_is_only_its_title():
    assert to_markdown(docx_blocks("doc3", "空白", [])) == ("空白", "# 空白\n\n")
