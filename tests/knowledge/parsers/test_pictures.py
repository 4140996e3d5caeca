"""Pictures inside documents read by OCR where they stand (knowledge/parsers/pictures.py): DOCX inline pictures,
PPTX picture shapes, an image-only page among a PDF's text pages. Each picture is a few lines drawn with the
machine's CJK font (WQY), so one OCR call takes about a second.
"""
from __future__ import annotations

import io

import pytest
from PIL import Image, ImageDraw, ImageFont

from knowledge.chunking import chunk_document
from knowledge.models import DocumentStatus
from knowledge.parsers import parse_file
from knowledge.parsers.base import parse_nested
from knowledge.parsers.types import ParseOptions
from tests.docgen import cjk_font_path, raw_pdf, text_image, text_page

LOGIN = ["用户名：请输入员工工号", "密码：初始密码为身份证后六位"]
NUMBERED = ["一、注意事项", "连续五次输错密码账号将被锁定"]


def _png(lines: list[str]) -> bytes:
    return text_image(lines, size=26, width=900)


def _blank_png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (600, 300), (200, 220, 240)).save(buffer, format="PNG")
    return buffer.getvalue()


def _icon_png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), "red").save(buffer, format="PNG")
    return buffer.getvalue()


def manual_docx(pictures: list[bytes]) -> bytes:
    """一、 and 二、 sections in plain paragraphs (no heading styles); the pictures in the first section."""
    import docx
    from docx.shared import Inches

    document = docx.Document()
    document.add_paragraph("一、系统登录")
    document.add_paragraph("打开浏览器，输入系统地址后，出现如下登录界面。")
    for picture in pictures:
        document.add_picture(io.BytesIO(picture), width=Inches(5))
    document.add_paragraph("输入后点击登录按钮。")
    document.add_paragraph("二、修改密码")
    document.add_paragraph("首次登录后请立即修改初始密码。")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_docx_picture_is_read_where_it_stands_marked_as_ocr() -> None:
    calls: list[tuple[int, int]] = []
    doc = parse_nested("手册.docx", manual_docx([_png(LOGIN)]),
                       ParseOptions(on_page=lambda done, total: calls.append((done, total))))
    kinds = [(b.kind, b.text) for b in doc.blocks]
    assert kinds == [("heading", "一、系统登录"), ("text", "打开浏览器，输入系统地址后，出现如下登录界面。"),
                     ("text", "\n".join(LOGIN)), ("text", "输入后点击登录按钮。"), ("heading", "二、修改密码"),
                     ("text", "首次登录后请立即修改初始密码。")]
    picture = doc.blocks[2]
    assert picture.meta["ocr"] is True and picture.meta["picture"] is True and picture.meta["ocr_confidence"] > 0.9
    assert doc.metadata["pictures_read"] == 1 and "pictures_skipped" not in doc.metadata
    assert calls == [(0, 1), (1, 1)]
    chunks = chunk_document(doc)
    ocr_chunks = [c for c in chunks if c.metadata.get("ocr")]
    assert [c.section_path for c in ocr_chunks] == [["一、系统登录"]]
    assert 0.9 < ocr_chunks[0].metadata["ocr_confidence"] <= 1
    assert all(not c.metadata.get("ocr") for c in chunks if c is not ocr_chunks[0])


def test_numbered_lines_in_a_picture_do_not_become_headings() -> None:
    doc = parse_file("手册.docx", manual_docx([_png(NUMBERED)]))
    assert [b.text for b in doc.blocks if b.kind == "heading"] == ["一、系统登录", "二、修改密码"]
    assert any(b.meta.get("picture") and b.text.startswith("一、注意事项") for b in doc.blocks)


def test_pictures_without_text_tiny_or_over_the_budget_are_skipped_not_failed() -> None:
    data = manual_docx([_icon_png(), _blank_png(), _png(LOGIN), _png(NUMBERED)])
    doc = parse_nested("手册.docx", data, ParseOptions(max_pictures=2))
    pictures = [b for b in doc.blocks if b.meta.get("picture")]
    # The icon is passed over, the blank picture is read (no text), the login screenshot is read, the last one is
    # over the budget of two pictures.
    assert [b.text for b in pictures] == ["\n".join(LOGIN)]
    assert doc.metadata["pictures_read"] == 2 and doc.metadata["pictures_skipped"] == 1
    # The file's OCR budget counts pictures too.
    doc = parse_nested("手册.docx", data, ParseOptions(max_ocr_pages=1))
    assert doc.metadata["pictures_read"] == 1 and doc.metadata["pictures_skipped"] == 2
    assert not any(b.meta.get("picture") for b in doc.blocks)


def table_docx(cells: list[list[str | bytes]]) -> bytes:
    """A heading, then a table whose cells hold text (``str``) or a picture (``bytes``, a PNG)."""
    import docx
    from docx.shared import Inches

    document = docx.Document()
    document.add_paragraph("一、操作步骤")
    table = document.add_table(rows=len(cells), cols=len(cells[0]))
    for row, values in zip(table.rows, cells, strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            if isinstance(value, bytes):
                cell.paragraphs[0].add_run().add_picture(io.BytesIO(value), width=Inches(3))
            else:
                cell.text = value
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_docx_pictures_in_table_cells_are_read_into_their_cells() -> None:
    calls: list[tuple[int, int]] = []
    cells: list[list[str | bytes]] = [["步骤", "界面"], ["登录", _png(LOGIN)], ["锁定", _png(NUMBERED)],
                                      ["退出", "点击右上角的退出按钮"]]
    doc = parse_nested("步骤.docx", table_docx(cells), ParseOptions(on_page=lambda done, total: calls.append((done, total))))
    (table,) = [b for b in doc.blocks if b.kind == "table"]
    assert [list(row) for row in table.rows] == [["步骤", "界面"], ["登录", "".join(LOGIN)], ["锁定", "".join(NUMBERED)],
                                                 ["退出", "点击右上角的退出按钮"]]
    assert table.meta["ocr"] is True and table.meta["ocr_confidence"] > 0.9
    assert doc.metadata["pictures_read"] == 2 and calls[0] == (0, 2) and calls[-1] == (2, 2)
    assert [b.text for b in doc.blocks if b.kind == "heading"] == ["一、操作步骤"]  # 「一、注意事项」 in a cell is no heading
    (chunk,) = [c for c in chunk_document(doc) if c.chunk_type == "table"]
    assert chunk.metadata["ocr"] is True and "初始密码为身份证后六位" in chunk.content


def slides_with_pictures() -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    presentation = Presentation()
    logo = _png(["星河科技"])
    for title, lines in (("报销流程", ["第一步：填写报销单", "第二步：部门经理审批"]),
                         ("报销时限", ["费用发生后三十天内提交报销"])):
        slide = presentation.slides.add_slide(presentation.slide_layouts[5])
        slide.shapes.title.text = title
        slide.shapes.add_picture(io.BytesIO(_png(lines)), Inches(1), Inches(2), width=Inches(6))
        slide.shapes.add_picture(io.BytesIO(logo), Inches(7), Inches(6.5), width=Inches(2))  # on every slide
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def test_pptx_picture_shapes_are_read_on_their_slide_and_a_repeated_logo_once() -> None:
    doc = parse_file("报销.pptx", slides_with_pictures())
    assert [(b.kind, b.text, b.page) for b in doc.blocks] == [
        ("heading", "报销流程", 1), ("text", "第一步：填写报销单\n第二步：部门经理审批", 1), ("text", "星河科技", 1),
        ("heading", "报销时限", 2), ("text", "费用发生后三十天内提交报销", 2)]
    assert all(b.meta["ocr"] and b.meta["ocr_confidence"] > 0.9 for b in doc.blocks if b.kind == "text")
    assert doc.metadata["pictures_read"] == 3
    assert [c.section_path for c in chunk_document(doc)] == [["报销流程"], ["报销时限"]]  # a slide's pictures share a chunk


def _page_jpeg(lines: list[str]) -> bytes:
    """An A4 page at 150 DPI with ``lines`` at its top, as a scanner would give it."""
    image = Image.new("RGB", (1240, 1754), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(cjk_font_path(), 30)
    for index, line in enumerate(lines):
        draw.text((120, 150 + index * 60), line, font=font, fill="black")
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def test_an_image_only_page_among_text_pages_is_read_in_its_place() -> None:
    first = "Chapter one. The travel policy applies to every employee on a business trip."
    last = "Chapter three. Claims are paid within ten working days of their approval."
    data = raw_pdf([text_page(first), b"", text_page(last)], images={2: _page_jpeg(LOGIN)})
    doc = parse_file("混合.pdf", data)
    assert doc.metadata["ocr_pages"] == [2]
    assert [(b.text, b.page, bool(b.meta.get("ocr"))) for b in doc.blocks] == [
        (first, 1, False), ("".join(LOGIN), 2, True), (last, 3, False)]  # the page's lines join into one paragraph
    assert doc.blocks[1].meta["ocr_confidence"] > 0.9


@pytest.mark.django_db
def test_docx_picture_uploaded_through_the_api_is_a_searchable_ocr_chunk(kb, alice, client_for, ingest) -> None:
    (document,) = ingest(kb, {"登录手册.docx": manual_docx([_png(LOGIN)])}, user=alice)
    assert document.status == DocumentStatus.READY, document.error_message
    assert document.metadata["pictures_read"] == 1
    client = client_for(alice)
    found = client.post("/api/search/", {"query": "登录时用户名填员工工号吗", "kb_ids": [kb.pk]}, format="json").json()
    top = found["results"][0]
    assert "员工工号" in top["content"] and top["section_path"] == ["一、系统登录"]
    chunks = client.get(f"/api/kbs/{kb.pk}/chunks/", {"document": document.pk}).json()
    (picture,) = [c for c in chunks.get("results", chunks) if "身份证后六位" in c["content"]]
    assert picture["metadata"]["ocr"] is True and picture["metadata"]["ocr_confidence"] > 0.9
