"""Chinese numbering with its real nesting, no heading-only chunks, titles that mean something (issue 23, 2–4)."""
from __future__ import annotations

import io

import pytest

from knowledge.chunking import chunk_document
from knowledge.parsers import parse_file
from knowledge.parsers.headings import HeadingDetector
from knowledge.titles import metadata_title
from tests.numbered import DOCUMENTS, as_docx, as_pdf, as_txt, heading_only, placed

FORMATS = {
    "txt": lambda name: (f"{name}.txt", as_txt(name)),
    "gbk": lambda name: (f"{name}.txt", as_txt(name, "gbk")),
    "docx": lambda name: (f"{name}.docx", as_docx(name)),
    "docx-title-style": lambda name: (f"{name}.docx", as_docx(name, styled_title=True)),
    "pdf": lambda name: (f"{name}.pdf", as_pdf(name)),
}


def _levels(lines: list[str]) -> list[int | None]:
    detector, previous, out = HeadingDetector(), "", []
    for line in lines:
        found = detector.feed(line, previous)
        out.append(None if found is None else found[0])
        previous = line
    return out


# --- the detector ------------------------------------------------------------------------------


def test_an_article_stands_inside_the_open_headings_and_closes_none() -> None:
    levels = _levels(["第一章 费用标准", "一、交通费", "第一条 乘坐火车的，报销二等座票价。", "二、住宿费", "（一）一线城市",
                      "第二条 一线城市住宿费每晚不超过六百元。", "（二）其他城市"])
    # 二、 is still a sibling of 一、 (the article did not close 一、), （二） of （一）.
    assert levels == [1, 2, 3, 2, 3, 4, 3]


def test_numbered_kinds_nest_by_their_first_appearance_in_each_section() -> None:
    assert _levels(["1. 检查范围", "（一）办公区域", "（二）生产区域", "2. 检查时间"]) == [1, 2, 2, 1]
    # A new chapter takes the order afresh: here （一） comes first, so 一、 is inside it.
    assert _levels(["第一章 总则", "一、目的", "（一）范围", "第二章 细则", "（一）申请", "一、材料"]) == [1, 2, 3, 1, 2, 3]


def test_sections_nest_by_rank_part_chapter_section() -> None:
    assert _levels(["第一编 总则", "第一章 一般规定", "第一节 原则", "一、核心数据", "第二节 管理", "第二编 附则"]) == [
        1, 2, 3, 4, 3, 1]


# --- whole documents, every format -------------------------------------------------------------


@pytest.mark.parametrize("kind", list(FORMATS))
@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_every_checked_chunk_is_under_its_right_section_path(name: str, kind: str) -> None:
    filename, data = FORMATS[kind](name)
    doc = parse_file(filename, data)
    assert doc.title == DOCUMENTS[name][0]
    chunks = chunk_document(doc)
    right, checked, wrong = placed(chunks, name)
    assert (right, wrong) == (checked, [])
    assert heading_only(chunks, name) == []
    assert all(c.chunk_type != "heading" for c in chunks)


@pytest.mark.parametrize("kind", ["gbk", "docx", "pdf"])
def test_the_issue_example_article_four_sits_under_its_city_class(kind: str) -> None:
    filename, data = FORMATS[kind]("policy")
    chunks = chunk_document(parse_file(filename, data))
    (four,) = [c for c in chunks if c.metadata.get("article") == "第四条"]
    assert four.section_path == ["第二章 费用标准", "二、住宿费", "（一）一线城市"]
    assert four.content.startswith("第四条 一线城市住宿费")
    (three,) = [c for c in chunks if c.metadata.get("article") == "第三条"]
    assert three.section_path == ["第二章 费用标准", "一、交通费"]


def test_an_empty_section_heading_travels_into_the_next_chunk() -> None:
    text = "通知\n\n一、背景\n\n二、要求\n\n各部门应当按时提交材料。\n\n三、附则"
    chunks = chunk_document(parse_file("通知.txt", text.encode()))
    assert [(c.content, c.section_path) for c in chunks] == [("一、背景\n各部门应当按时提交材料。\n三、附则", ["二、要求"])]


def test_a_docx_title_is_the_documents_title_not_a_chunk() -> None:
    import docx

    document = docx.Document()
    document.add_heading("员工考勤管理制度", level=0)
    document.add_heading("总则", level=1)
    document.add_paragraph("员工应当按时上下班，不得迟到早退。")
    document.add_heading("请假", level=1)
    document.add_paragraph("请假须提前一天在系统中提交申请。")
    buffer = io.BytesIO()
    document.save(buffer)
    doc = parse_file("考勤.docx", buffer.getvalue())
    assert doc.title == "员工考勤管理制度"
    chunks = chunk_document(doc)
    assert [(c.content, c.section_path) for c in chunks] == [
        ("员工应当按时上下班，不得迟到早退。", ["总则"]), ("请假须提前一天在系统中提交申请。", ["请假"])]


@pytest.mark.django_db
def test_a_gbk_policy_ingests_with_its_articles_under_their_sections(kb, ingest) -> None:
    (doc,) = ingest(kb, {"差旅费管理办法.txt": as_txt("policy", "gbk")})
    assert doc.status == "ready", doc.error_message
    chunks = list(doc.chunks.order_by("ordinal"))
    assert placed(chunks, "policy")[:2] == (6, 6)
    assert doc.chunks.filter(chunk_type="heading").count() == 0


# --- titles ------------------------------------------------------------------------------------


@pytest.mark.parametrize("title", [
    "(anonymous)", "anonymous", "Untitled", "untitled document", "Microsoft Word - 文档1.docx", "PowerPoint 演示文稿",
    "Microsoft PowerPoint - 演示文稿1.pptx", "无标题", "Document1", "幻灯片 1", "WPS文字 - 新建文档", "Title", "", None,
])
def test_placeholder_metadata_titles_are_no_titles(title) -> None:
    assert metadata_title(title) == ""


@pytest.mark.parametrize(("title", "kept"), [
    ("差旅费管理办法", "差旅费管理办法"),
    ("Microsoft Word - 差旅报销制度.docx", "差旅报销制度"),
    ("《员工手册》", "员工手册"),
    ("2024年度预算", "2024年度预算"),
    ("Release Notes", "Release Notes"),
])
def test_meaningful_metadata_titles_are_kept(title, kept) -> None:
    assert metadata_title(title) == kept


def test_a_pdf_titled_anonymous_is_named_by_its_first_heading() -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.platypus import Paragraph, SimpleDocTemplate

    from tests.docgen import _reportlab_font

    style = ParagraphStyle("body", fontName=_reportlab_font(False), fontSize=11, leading=17, wordWrap="CJK")
    buffer = io.BytesIO()
    SimpleDocTemplate(buffer, pagesize=A4, title="(anonymous)", author="(anonymous)").build(
        [Paragraph(line, style) for line in ["一、报销范围", "员工因公出差产生的交通费和住宿费可以报销。",
                                              "二、报销时限", "出差结束后十个工作日内提交报销申请。"]])
    doc = parse_file("scan_0001.pdf", buffer.getvalue())
    assert doc.title == "一、报销范围"
    assert all("anonymous" not in c.enriched for c in chunk_document(doc))


def test_docx_and_pptx_placeholder_core_titles_give_way() -> None:
    import docx
    from pptx import Presentation

    document = docx.Document()
    document.core_properties.title = "Microsoft Word - 文档1.docx"
    document.add_paragraph("年假申请流程")
    document.add_paragraph("一、申请")
    document.add_paragraph("员工在系统中提交年假申请。")
    buffer = io.BytesIO()
    document.save(buffer)
    assert parse_file("文档1.docx", buffer.getvalue()).title == "年假申请流程"

    deck = Presentation()
    deck.core_properties.title = "PowerPoint 演示文稿"
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "季度经营分析"
    slide.placeholders[1].text = "第三季度收入同比增长百分之十二。"
    buffer = io.BytesIO()
    deck.save(buffer)
    assert parse_file("演示文稿1.pptx", buffer.getvalue()).title == "季度经营分析"


def test_an_untitled_html_page_is_named_by_its_heading() -> None:
    page = "<html><head><title>Untitled</title></head><body><h1>报销指南</h1><p>发票须在三十日内提交。</p></body></html>"
    assert parse_file("page.html", page.encode()).title == "报销指南"
