"""Documents as people have them: PDF layout and tables, Chinese numbered headings, slides, JSON metadata."""
from __future__ import annotations

import io
import json

import docx
import pytest

from knowledge.chunking import ChunkingConfig, chunk_document
from knowledge.parsers import ParseError, parse_file
from knowledge.parsers.headings import HeadingDetector, candidate, cn_number
from tests.docgen import MANUAL_TITLE, manual_pdf, policy_pdf, slides_pptx


def _headings(doc) -> list[tuple[int, str]]:
    return [(b.level, b.text) for b in doc.blocks if b.kind == "heading"]


def _detect(lines: list[str]) -> list[tuple[int, str] | None]:
    detector, previous, out = HeadingDetector(), "", []
    for line in lines:
        found = detector.feed(line, previous)
        out.append(None if found is None else (found[0], found[1].text))
        previous = line
    return out


# --- numbered headings --------------------------------------------------------------------------


def test_chinese_numbers_are_read() -> None:
    assert [cn_number(t) for t in ["一", "十", "十二", "二十", "二十三", "一百零五", "12", "甲"]] == [
        1, 10, 12, 20, 23, 105, 12, None]


def test_each_marker_kind_is_a_heading_candidate() -> None:
    assert candidate("第三章 报销标准").kind == "chapter"
    assert candidate("第二节　审批").kind == "section"
    assert candidate("一、总体要求").kind == "cn"
    assert candidate("（二）工作目标").kind == "cn_paren"
    assert candidate("3. 附则").kind == "arabic1"
    assert candidate("1.2 申请流程").kind == "arabic2"
    assert candidate("(1) 填写申请单").kind == "arabic_paren"
    article = candidate("第十二条 员工应当遵守本办法。")
    assert (article.kind, article.text, article.rest) == ("article", "第十二条", "员工应当遵守本办法。")


@pytest.mark.parametrize("line", [
    "1.5倍工资",  # a number with a unit
    "2024.3.1 起执行新的考勤系统",  # a date
    "3 个工作日内完成审批",  # a bare number starting a sentence
    "一、各部门应当在每月五日前提交报表。",  # a numbered sentence (ends with 。)
    "1. 申请人应当提交以下材料：",  # a list introduction
    "第三条规定的情形除外",  # a reference to an article, not an article
])
def test_sentences_that_start_with_numbers_are_not_headings(line: str) -> None:
    found = candidate(line)
    assert found is None or found.rest or _detect([line]) == [None] or found.kind == "article"
    assert _detect(["1. 总则", line])[1] is None


def test_numbers_must_continue_their_sequence() -> None:
    assert _detect(["一、总则", "三、附则", "二、范围"]) == [(1, "一、总则"), None, (1, "二、范围")]
    assert _detect(["1. 概述", "1.1 范围", "1.5 倍率说明", "1.2 术语"]) == [
        (1, "1. 概述"), (2, "1.1 范围"), None, (2, "1.2 术语")]


def test_a_numbered_list_after_a_colon_is_not_headings() -> None:
    lines = ["1. 申请", "需提交以下材料：", "1. 身份证复印件", "2. 户口本复印件", "3. 近期照片", "2. 审批"]
    assert _detect(lines) == [(1, "1. 申请"), None, None, None, None, (1, "2. 审批")]


def test_levels_follow_the_kinds_a_document_uses() -> None:
    assert _detect(["一、概况", "（一）背景", "1. 起因", "1.1 经过", "（二）目标", "二、措施"]) == [
        (1, "一、概况"), (2, "（一）背景"), (3, "1. 起因"), (4, "1.1 经过"), (2, "（二）目标"), (1, "二、措施")]
    # Without 一、 the （一） headings are the top level.
    assert _detect(["（一）背景", "1. 起因", "（二）目标"]) == [(1, "（一）背景"), (2, "1. 起因"), (1, "（二）目标")]


def test_run_in_heading_splits_from_its_paragraph() -> None:
    found = candidate("（一）加强组织领导。各部门要把差旅管理列入议事日程。")
    assert (found.text, found.rest) == ("（一）加强组织领导", "各部门要把差旅管理列入议事日程。")


POLICY_TEXT = """星河科技有限公司员工请假管理规定

第一章 总则
第一条 为规范员工请假管理，保障员工合法权益，根据有关法律法规，制定本规定。
第二条 本规定适用于公司全体员工，包括试用期员工。

第二章 假期种类
第三条 公司假期分为以下几类：
1. 年休假
2. 病假
3. 事假
第四条 员工加班的，按照工资的1.5倍支付加班费。
2024.3.1 起执行新的考勤系统，员工应当按时打卡。

第三章 附则
第五条 本规定自2024年3月1日起施行。
"""


def test_gbk_policy_text_gets_sections_from_its_numbering() -> None:
    doc = parse_file("请假管理规定.txt", POLICY_TEXT.encode("gbk"))
    assert doc.metadata["encoding"] == "gb18030"
    assert doc.title == "星河科技有限公司员工请假管理规定"
    assert _headings(doc) == [
        (1, "第一章 总则"), (2, "第一条"), (2, "第二条"), (1, "第二章 假期种类"), (2, "第三条"), (2, "第四条"),
        (1, "第三章 附则"), (2, "第五条")]
    chunks = chunk_document(doc)
    # An article opens no section: it is its chunk's first words, under the chapter it stands in.
    by_article = {c.metadata["article"]: c for c in chunks}
    assert by_article["第三条"].content == "第三条 公司假期分为以下几类：\n1. 年休假\n2. 病假\n3. 事假"
    assert by_article["第三条"].section_path == ["第二章 假期种类"]
    assert "1.5倍" in by_article["第四条"].content and "2024.3.1" in by_article["第四条"].content
    assert (by_article["第五条"].content, by_article["第五条"].section_path) == (
        "第五条 本规定自2024年3月1日起施行。", ["第三章 附则"])


def test_docx_without_heading_styles_gets_sections_from_its_numbering() -> None:
    document = docx.Document()
    for text in ["一、总体要求", "各部门应当严格执行预算。", "（一）预算编制", "预算每年十月编制。", "（二）预算执行",
                 "超出预算百分之十的支出须经总经理批准。", "二、监督检查", "财务部每季度检查一次。"]:
        document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    doc = parse_file("预算管理.docx", buffer.getvalue())
    assert _headings(doc) == [(1, "一、总体要求"), (2, "（一）预算编制"), (2, "（二）预算执行"), (1, "二、监督检查")]
    chunks = chunk_document(doc)
    assert [c.section_path for c in chunks if c.chunk_type == "text"] == [
        ["一、总体要求"], ["一、总体要求", "（一）预算编制"], ["一、总体要求", "（二）预算执行"], ["二、监督检查"]]


def test_docx_with_only_a_styled_title_gets_its_numbered_sections_under_it() -> None:
    document = docx.Document()
    document.add_heading("预算管理办法", level=0)
    for text in ["第一章 总则", "第一条 为加强预算管理，制定本办法。", "第二章 预算编制", "第二条 预算每年十月编制。"]:
        document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    doc = parse_file("预算.docx", buffer.getvalue())
    assert doc.title == "预算管理办法"
    assert _headings(doc) == [(1, "预算管理办法"), (2, "第一章 总则"), (3, "第一条"), (2, "第二章 预算编制"), (3, "第二条")]


def test_docx_heading_styles_are_not_second_guessed() -> None:
    document = docx.Document()
    document.add_heading("概述", level=1)
    document.add_paragraph("一、这一行是正文")
    buffer = io.BytesIO()
    document.save(buffer)
    assert _headings(parse_file("a.docx", buffer.getvalue())) == [(1, "概述")]


# --- PDF layout ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def manual():
    data, truth = manual_pdf()
    return parse_file("运维手册.pdf", data), truth


@pytest.fixture(scope="module")
def policy():
    data, truth = policy_pdf(pad_pages=6)
    return parse_file("差旅费管理办法.pdf", data), truth


def test_pdf_headings_found_at_their_levels(manual, policy) -> None:
    for doc, truth in (manual, policy):
        assert _headings(doc) == truth.headings


def test_pdf_title_is_the_large_line_on_top(manual) -> None:
    doc, _ = manual
    assert doc.title == MANUAL_TITLE
    assert all(MANUAL_TITLE not in b.text for b in doc.blocks)


def test_pdf_table_is_kept_whole_with_its_header(policy) -> None:
    doc, truth = policy
    (table,) = [b for b in doc.blocks if b.kind == "table"]
    assert [list(row) for row in table.rows] == truth.tables[0]
    (chunk,) = [c for c in chunk_document(doc) if c.chunk_type == "table"]
    assert (chunk.section_path, chunk.metadata["article"]) == (["第三章 费用标准"], "第五条")
    assert chunk.content.splitlines()[0] == "| 城市类别 | 职级 | 住宿上限（元/晚） | 伙食补助（元/天） |"
    assert chunk.metadata["columns"] == truth.tables[0][0]


def test_pdf_table_over_a_page_break_is_merged_into_one(manual) -> None:
    doc, truth = manual
    (table,) = [b for b in doc.blocks if b.kind == "table"]
    assert [list(row) for row in table.rows] == truth.tables[0]  # the repeated header row is not a data row
    assert (table.page, table.page_end) == (1, 2)
    (chunk,) = [c for c in chunk_document(doc, ChunkingConfig(table_max_chars=2000)) if c.chunk_type == "table"]
    assert (chunk.page_start, chunk.page_end) == (1, 2)
    assert chunk.section_path == ["二、日常维护", "1. 巡检", "1.1 服务器清单"]


def test_large_table_splits_by_rows_repeating_the_header_with_each_parts_pages(manual) -> None:
    doc, truth = manual
    parts = [c for c in chunk_document(doc, ChunkingConfig(table_max_chars=500)) if c.chunk_type == "table"]
    assert len(parts) > 2
    header = parts[0].content.splitlines()[:2]
    assert all(part.content.splitlines()[:2] == header for part in parts)
    assert sum(part.metadata["row_count"] for part in parts) == len(truth.tables[0]) - 1
    assert (parts[0].page_start, parts[-1].page_end) == (1, 2)
    assert parts[0].page_start == 1 and parts[-1].page_start == 2  # each part carries the pages of its rows
    assert "row_pages" not in parts[0].metadata


def test_pdf_running_header_and_page_numbers_are_dropped(manual, policy) -> None:
    for doc, _ in (manual, policy):
        text = "\n".join(b.text for b in doc.blocks)
        assert "内部文件" not in text and "运维手册" not in text.replace(MANUAL_TITLE, "")
        assert "- 1 -" not in text and "- 2 -" not in text
        assert doc.metadata["running_lines_dropped"] >= 4


def test_pdf_paragraphs_are_whole_and_in_order(policy) -> None:
    doc, truth = policy
    texts = [b.text for b in doc.blocks if b.kind == "text"]
    assert texts == truth.paragraphs
    chunks = chunk_document(doc)
    assert all(c.page_start is not None for c in chunks)
    assert max(c.page_end for c in chunks) == doc.metadata["pages"] >= 2


def test_pdf_two_columns_are_read_column_by_column() -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    buffer = io.BytesIO()
    page = canvas.Canvas(buffer, pagesize=A4)
    page.setFont("STSong-Light", 11)
    left = ["左栏第一行文字说明，一栏宽的一整行字", "左栏第二行文字说明，一栏宽的一整行字", "左栏第三行文字到这里结束。"]
    right = ["右栏第一行文字说明，一栏宽的一整行字", "右栏第二行文字说明，一栏宽的一整行字", "右栏第三行文字到这里结束。"]
    for index, (a, b) in enumerate(zip(left, right, strict=True)):
        y = 700 - index * 16
        page.drawString(60, y, a)
        page.drawString(310, y, b)
    page.save()
    doc = parse_file("two-columns.pdf", buffer.getvalue())
    assert [b.text for b in doc.blocks] == ["".join(left), "".join(right)]


# --- slides -------------------------------------------------------------------------------------


def test_pptx_one_section_per_slide_with_notes_and_tables() -> None:
    doc = parse_file("产品规划.pptx", slides_pptx())
    assert doc.title == "二〇二四年度产品规划"
    assert doc.metadata == {"slides": 3, "notes": 1}
    chunks = chunk_document(doc)
    assert [(c.section_path, c.chunk_type, c.page_start) for c in chunks] == [
        (["二〇二四年度产品规划"], "text", 1),
        (["核心目标"], "text", 2),
        (["核心目标"], "text", 2),
        (["季度里程碑"], "table", 3),
    ]
    assert chunks[1].content == "上线知识库问答功能\n检索准确率提升到百分之九十"
    assert chunks[2].content == "备注：讲解时强调：问答功能在第二季度上线。" and chunks[2].metadata == {"notes": True}
    assert chunks[3].content.splitlines()[2] == "| 第一季度 | 完成检索改造 |"


def test_pptx_that_is_a_docx_is_type_mismatch() -> None:
    document = docx.Document()
    document.add_paragraph("x")
    buffer = io.BytesIO()
    document.save(buffer)
    with pytest.raises(ParseError) as caught:
        parse_file("slides.pptx", buffer.getvalue())
    assert caught.value.code == "type_mismatch"


# --- images checked by content ------------------------------------------------------------------


def test_image_named_png_that_is_not_one_is_type_mismatch() -> None:
    with pytest.raises(ParseError) as caught:
        parse_file("notice.png", b"%PDF-1.4 not an image")
    assert caught.value.code == "type_mismatch"
    with pytest.raises(ParseError) as caught:
        parse_file("photo.jpg", _png(10, 10))
    assert caught.value.code == "type_mismatch"


def test_truncated_png_is_corrupt_file() -> None:
    with pytest.raises(ParseError) as caught:
        parse_file("notice.png", _png(200, 200)[:60])
    assert caught.value.code == "corrupt_file"


def test_image_bomb_is_refused_before_decoding() -> None:
    import struct
    import zlib

    # A valid PNG header claiming 60000 × 60000 pixels, with one tiny compressed row.
    header = struct.pack(">IIBBBBB", 60000, 60000, 8, 0, 0, 0, 0)
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0")) + chunk(b"IEND", b"")
    with pytest.raises(ParseError) as caught:
        parse_file("huge.png", data)
    assert caught.value.code == "image_too_large"


def _png(width: int, height: int) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(buffer, format="PNG")
    return buffer.getvalue()


# --- metadata is JSON ---------------------------------------------------------------------------


def _natural_json(value) -> bool:
    """Only dicts with string keys, lists, strings, numbers, booleans and None, all the way down."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _natural_json(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_natural_json(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))


def test_every_parsers_metadata_is_natural_json() -> None:
    from tests.knowledge.parsers.test_parsers import _docx_bytes, _eml_bytes, _pdf_bytes, _xlsx_bytes

    samples = {
        "a.md": "# 标题\n\n正文。".encode(), "a.txt": POLICY_TEXT.encode("gbk"), "a.html": "<h1>标题</h1><p>正文</p>".encode(),
        "a.docx": _docx_bytes(), "a.pdf": _pdf_bytes(), "b.pdf": policy_pdf()[0], "a.csv": "问题,答案\n怎么退款？,七天内。".encode(),
        "a.xlsx": _xlsx_bytes(), "a.eml": _eml_bytes(), "a.jsonl": '{"title": "t", "text": "正文"}\n'.encode(),
        "a.pptx": slides_pptx(),
    }
    for name, data in samples.items():
        doc = parse_file(name, data)
        assert _natural_json(doc.metadata), (name, doc.metadata)
        for chunk in chunk_document(doc):
            assert _natural_json(chunk.metadata), (name, chunk.metadata)
        assert json.loads(json.dumps(doc.metadata)) == doc.metadata


@pytest.mark.django_db
def test_xlsx_metadata_is_stored_as_json_not_as_a_repr(kb, ingest) -> None:
    from tests.knowledge.parsers.test_parsers import _xlsx_bytes

    (doc,) = ingest(kb, {"faq.xlsx": _xlsx_bytes()})
    assert doc.status == "ready", doc.error_message
    assert isinstance(doc.metadata["columns"], dict)
    assert all(isinstance(v, list) for v in doc.metadata["columns"].values())
    fields = [c.metadata.get("fields") for c in doc.chunks.all() if c.metadata.get("fields")]
    assert fields and all(isinstance(f, dict) for f in fields)


@pytest.mark.django_db
def test_policy_pdf_ingests_with_sections_tables_and_pages(kb, ingest) -> None:
    data, truth = manual_pdf()
    (doc,) = ingest(kb, {"运维手册.pdf": data})
    assert doc.status == "ready", doc.error_message
    parts = list(doc.chunks.filter(chunk_type="table").order_by("ordinal"))  # one table, split by rows (800 chars)
    assert (parts[0].page_start, parts[-1].page_end) == (1, 2)
    assert all(p.section_path == ["二、日常维护", "1. 巡检", "1.1 服务器清单"] for p in parts)
    assert "zk-node-28" in parts[-1].content and all(p.content.count("| 序号 |") == 1 for p in parts)
    assert doc.metadata["tables"] == 1 and doc.metadata["pages"] == 2


@pytest.mark.django_db
def test_gbk_policy_text_ingests_into_article_sections(kb, ingest) -> None:
    (doc,) = ingest(kb, {"请假管理规定.txt": POLICY_TEXT.encode("gbk")})
    assert doc.status == "ready", doc.error_message
    chunks = list(doc.chunks.order_by("ordinal"))
    paths = [c.section_path for c in chunks]
    placed = {c.metadata.get("article"): c.section_path for c in chunks}
    assert placed["第四条"] == ["第二章 假期种类"] and placed["第五条"] == ["第三章 附则"]
    assert not any("2024.3.1" in " ".join(p) or "1.5倍" in " ".join(p) for p in paths)


@pytest.mark.django_db
def test_slides_ingest_one_section_per_slide(kb, ingest) -> None:
    (doc,) = ingest(kb, {"产品规划.pptx": slides_pptx()})
    assert doc.status == "ready", doc.error_message
    assert doc.doc_type == "pptx" and doc.metadata["slides"] == 3
    notes = doc.chunks.get(metadata__notes=True)
    assert notes.section_path == ["核心目标"] and (notes.page_start, notes.page_end) == (2, 2)
    assert doc.chunks.get(chunk_type="table").section_path == ["季度里程碑"]


@pytest.mark.django_db
def test_upload_accepts_images_and_slides_and_refuses_other_pictures(kb, alice, client_for) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = client_for(alice)
    refused = client.post(f"/api/kbs/{kb.pk}/documents/", {"files": [SimpleUploadedFile("logo.gif", b"GIF89a...")]},
                          format="multipart")
    assert refused.status_code == 415 and refused.json()["error"]["code"] == "unsupported_type"
    assert ".png" in refused.json()["error"]["message"] and ".pptx" in refused.json()["error"]["message"]
    accepted = client.post(f"/api/kbs/{kb.pk}/documents/", {"files": [
        SimpleUploadedFile("notice.png", _png(20, 20)), SimpleUploadedFile("photo.jpeg", b"\xff\xd8\xff..."),
        SimpleUploadedFile("slides.pptx", slides_pptx())]}, format="multipart")
    assert accepted.status_code == 202
    from knowledge.models import Document

    ids = [row["id"] for row in accepted.json()["documents"]]
    assert sorted(Document.objects.filter(pk__in=ids).values_list("doc_type", flat=True)) == ["jpeg", "png", "pptx"]


def test_items_of_a_list_of_sentences_are_not_headings() -> None:
    lines = ["1. 申请", "员工应当提交：", "身份证明", "1. 身份证复印件；", "2. 户口本复印件", "3. 近期照片", "2. 审批"]
    assert _detect(lines) == [(1, "1. 申请"), None, None, None, None, None, (1, "2. 审批")]


def test_metadata_stored_as_reprs_reads_back_as_data() -> None:
    from importlib import import_module

    restored = import_module("knowledge.migrations.0012_metadata_as_json")._restored
    assert restored("{'常见问题': ['问题', '答案']}") == {"常见问题": ["问题", "答案"]}
    assert restored(["{'name': 'a.pdf', 'code': 'corrupt_file'}"]) == [{"name": "a.pdf", "code": "corrupt_file"}]
    assert restored("[见附件]") == "[见附件]" and restored("{__import__('os')}") == "{__import__('os')}"


@pytest.mark.django_db
def test_migration_restores_metadata_stored_as_reprs(kb) -> None:
    from importlib import import_module

    from django.apps import apps

    from knowledge.models import Document

    document = Document.objects.create(kb=kb, source_name="faq.xlsx", doc_type="xlsx", sha256="0" * 64,
                                       metadata={"columns": "{'常见问题': ['问题', '答案']}", "faq_count": 2})
    import_module("knowledge.migrations.0012_metadata_as_json").restore(apps, None)
    document.refresh_from_db()
    assert document.metadata == {"columns": {"常见问题": ["问题", "答案"]}, "faq_count": 2}


def test_a_form_of_labels_and_values_reads_row_by_row() -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    buffer = io.BytesIO()
    page = canvas.Canvas(buffer, pagesize=A4)
    page.setFont("STSong-Light", 11)
    rows = [("申请人：", "张伟"), ("部门：", "财务部"), ("出差地点：", "上海"), ("天数：", "三天")]
    for index, (label, value) in enumerate(rows):
        page.drawString(60, 700 - index * 24, label)
        page.drawString(330, 700 - index * 24, value)
    page.save()
    doc = parse_file("form.pdf", buffer.getvalue())
    text = "".join(b.text for b in doc.blocks).replace(" ", "")
    assert text == "".join(label + value for label, value in rows)


def test_pptx_with_a_garbage_presentation_part_is_corrupt_file() -> None:
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("ppt/presentation.xml", "not xml at all")
    with pytest.raises(ParseError) as caught:
        parse_file("broken.pptx", buffer.getvalue())
    assert caught.value.code == "corrupt_file"
