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


def _docx_with_captions() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("设备采购说明", level=1)
    document.add_paragraph("本节列出本年度采购的设备及其单价，供各部门编制预算时参考。")
    document.add_paragraph("表1 设备单价一览")
    table = document.add_table(rows=3, cols=2)
    for row, cells in zip(table.rows, [("设备", "单价"), ("笔记本电脑", "6800元"), ("显示器", "1500元")], strict=True):
        for cell, text in zip(row.cells, cells, strict=True):
            cell.text = text
    document.add_paragraph("以上单价均含税，有效期一年。")
    table = document.add_table(rows=2, cols=2)
    for row, cells in zip(table.rows, [("耗材", "单价"), ("硒鼓", "420元")], strict=True):
        for cell, text in zip(row.cells, cells, strict=True):
            cell.text = text
    document.add_paragraph("耗材单价", style="Caption")
    document.add_paragraph("表3 说明文字之后没有表格的题注")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_docx_table_caption_travels_with_its_table() -> None:
    from knowledge.chunking import chunk_document

    doc = parse_file("采购说明.docx", _docx_with_captions())
    tables = [b for b in doc.blocks if b.kind == "table"]
    assert [t.meta.get("caption") for t in tables] == ["表1 设备单价一览", "耗材单价"]
    texts = [b.text for b in doc.blocks if b.kind == "text"]
    assert "表1 设备单价一览" not in texts and "耗材单价" not in texts
    assert "表3 说明文字之后没有表格的题注" in texts  # a caption with no table next to it stays a paragraph
    chunks = chunk_document(doc)
    assert not [c for c in chunks if c.content.strip() in ("表1 设备单价一览", "耗材单价")]
    priced = next(c for c in chunks if "笔记本电脑" in c.content)
    assert priced.metadata["caption"] == "表1 设备单价一览"
    assert "表格：表1 设备单价一览" in priced.enriched
    consumables = next(c for c in chunks if "硒鼓" in c.content)
    assert consumables.metadata["caption"] == "耗材单价"


def test_pdf_named_by_an_id_still_never_takes_an_article_label() -> None:
    assert parse_file("scan_0001.pdf", _articles_pdf(None)).title == "scan_0001"


def price_xlsx(sheet: str = "价格表", *, second: str | None = None) -> bytes:
    """A price sheet as offices keep them: two title rows above the header (the first merged across it)."""
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet_one = workbook.active
    sheet_one.title = sheet
    sheet_one.append(["报价单（含税）", None, None])
    sheet_one.merge_cells("A1:C1")
    sheet_one.append(["生效日期：2026-01-01"])
    sheet_one.append(["型号", "单价（元）", "库存"])
    sheet_one.append(["ZK-1", 100, 5])
    sheet_one.append(["ZK-2", 1200, 0])
    if second:
        workbook.create_sheet(second).append(["型号", "颜色"])
        workbook[second].append(["ZK-1", "黑"])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def test_xlsx_title_rows_and_sheet_name_make_the_table_caption() -> None:
    from knowledge.chunking import chunk_document

    doc = parse_file("报价.xlsx", price_xlsx())
    (table,) = [b for b in doc.blocks if b.kind == "table"]
    assert table.meta["caption"] == "价格表 · 报价单（含税） 生效日期：2026-01-01"
    assert [list(r) for r in table.rows][0] == ["型号", "单价（元）", "库存"]
    (chunk,) = [c for c in chunk_document(doc) if c.chunk_type == "table"]
    assert "生效日期：2026-01-01" in chunk.metadata["caption"] and "报价单（含税）" in chunk.enriched
    assert parse_file("报价.xlsx", price_xlsx("Sheet1")).blocks[0].meta["caption"] == "报价单（含税） 生效日期：2026-01-01"
    # Several sheets: each is a section named by its sheet, and the caption keeps the title rows.
    doc = parse_file("报价.xlsx", price_xlsx(second="颜色"))
    assert [b.text for b in doc.blocks if b.kind == "heading"] == ["价格表", "颜色"]
    assert doc.blocks[1].meta["caption"] == "报价单（含税） 生效日期：2026-01-01"
