"""Issue 38 item 6: a PDF without a real title is named by its file name, XLSX title rows and DOCX table captions
travel with their table."""
from __future__ import annotations

import io

import pytest

from knowledge.parsers import parse_file
from tests.docgen import _reportlab_font


def _articles_pdf(title: str | None) -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    font = _reportlab_font(False)
    buffer = io.BytesIO()
    page = canvas.Canvas(buffer, pagesize=A4)
    if title is not None:
        page.setTitle(title)
    page.setFont(font, 11)
    y = 780
    for line in ["第一条 为规范采购管理，制定本办法。", "第二条 本办法适用于公司各部门。", "第三条 采购金额超过五万元的，应当招标。"]:
        page.drawString(60, y, line)
        y -= 20
    page.save()
    return buffer.getvalue()


@pytest.mark.parametrize("title", [None, "文档1", "Microsoft Word - 新建文档.docx"])
def test_pdf_without_a_real_title_is_named_by_its_file_name(title: str | None) -> None:
    doc = parse_file("采购管理办法.pdf", _articles_pdf(title))
    assert doc.title == "采购管理办法"
    assert [b.text for b in doc.blocks if b.kind == "heading"][:2] == ["第一条", "第二条"]


def test_pdf_with_a_real_metadata_title_keeps_it() -> None:
    assert parse_file("scan_0001.pdf", _articles_pdf("集团采购管理办法")).title == "集团采购管理办法"
