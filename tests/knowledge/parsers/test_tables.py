"""Tables as tables: borderless ones in text PDFs (found from the text's alignment), spreadsheets that are not FAQ
sheets. Every file is generated here (reportlab, openpyxl)."""
from __future__ import annotations

import io

import pytest

from knowledge.chunking import ChunkingConfig, chunk_document
from knowledge.parsers import parse_file
from tests.docgen import POLICY, manual_pdf, policy_pdf

PARTS = [["项目", "说明", "数量", "单价（元）"]] + [
    [f"配件{i:02d}", "标准型号，适用于全部机型" + ("，含安装服务与三年保修" if i % 3 == 0 else ""), str(i), str(10 * i)]
    for i in range(1, 41)
]


def _tables(doc):
    return [b for b in doc.blocks if b.kind == "table"]


# --- borderless tables in PDFs -------------------------------------------------------------------


def test_borderless_table_is_kept_whole_with_its_header() -> None:
    data, truth = policy_pdf(pad_pages=6, ruled=False)
    doc = parse_file("差旅费管理办法.pdf", data)
    (table,) = _tables(doc)
    assert [list(row) for row in table.rows] == truth.tables[0]
    (chunk,) = [c for c in chunk_document(doc) if c.chunk_type == "table"]
    assert chunk.section_path == ["第三章 费用标准"]  # 「第五条」 is an article, not a section
    assert chunk.content.splitlines()[0] == "| 城市类别 | 职级 | 住宿上限（元/晚） | 伙食补助（元/天） |"
    texts = [b.text for b in doc.blocks if b.kind == "text"]
    assert texts == truth.paragraphs  # no table row leaks into the paragraphs, no paragraph into the table


def test_borderless_table_over_a_page_break_is_one_table_split_by_rows_with_the_header() -> None:
    data, truth = manual_pdf(ruled=False)
    doc = parse_file("运维手册.pdf", data)
    (table,) = _tables(doc)
    assert [list(row) for row in table.rows] == truth.tables[0]  # the header repeated on page 2 is not a row
    assert (table.page, table.page_end) == (1, 2)
    parts = [c for c in chunk_document(doc, ChunkingConfig(table_max_chars=500)) if c.chunk_type == "table"]
    assert len(parts) > 2
    assert all(part.content.splitlines()[:2] == parts[0].content.splitlines()[:2] for part in parts)
    assert parts[0].content.splitlines()[0] == "| 序号 | 主机名 | 用途 | 内存（GB） | 负责人 |"
    assert sum(part.metadata["row_count"] for part in parts) == len(truth.tables[0]) - 1
    assert all(line.count("|") == 6 for part in parts for line in part.content.splitlines())  # rows kept whole
    assert parts[0].page_start == 1 and parts[-1].page_end == 2


@pytest.mark.parametrize("ruled", [True, False])
def test_forty_rows_with_wrapped_cells_read_cell_by_cell(ruled: bool) -> None:
    content = [("h", 1, "一、配件价格"), ("p", "下表列出全部配件的价格。"), ("t", PARTS), ("p", "以上价格均含税。")]
    data, _ = policy_pdf(content=content, ruled=ruled)
    doc = parse_file("配件.pdf", data)
    (table,) = _tables(doc)
    assert [list(row) for row in table.rows] == PARTS
    assert [b.text for b in doc.blocks if b.kind == "text"] == ["下表列出全部配件的价格。", "以上价格均含税。"]


def test_borderless_latin_table_keeps_words_of_a_cell_together() -> None:
    rows = [["Model", "Description", "Weight (kg)"], ["ZK-100", "Desk stand with cable tray", "4.5"],
            ["ZK-200", "Wall mount for large screens", "7.25"], ["ZK-300", "Mobile cart on four wheels", "18"]]
    data, _ = policy_pdf(content=[("h", 1, "一、产品"), ("t", rows)], ruled=False)
    (table,) = _tables(parse_file("products.pdf", data))
    assert [list(row) for row in table.rows] == rows


def test_prose_pdfs_give_no_table() -> None:
    prose = [item for item in POLICY if item[0] != "t"]
    data, _ = policy_pdf(content=prose, pad_pages=12, ruled=False)
    doc = parse_file("办法.pdf", data)
    assert not _tables(doc) and "tables" not in doc.metadata
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.platypus import Paragraph, SimpleDocTemplate

    english = ("The platform keeps every document in its knowledge base, splits it into passages and indexes "
               "them for search; answers quote the passages they rest on, with their pages. ") * 4
    justified = ParagraphStyle("j", fontName="Helvetica", fontSize=11, leading=15, alignment=4, spaceAfter=8)
    buffer = io.BytesIO()
    SimpleDocTemplate(buffer, pagesize=A4).build([Paragraph(english, justified) for _ in range(12)])
    assert not _tables(parse_file("guide.pdf", buffer.getvalue()))


def test_a_column_of_prose_beside_a_small_table_is_not_taken_into_it() -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    buffer = io.BytesIO()
    page = canvas.Canvas(buffer, pagesize=A4)
    page.setFont("STSong-Light", 11)
    prose = [f"左栏正文第{i + 1}行，一栏宽的一整行文字说明。" for i in range(20)]
    for index, line in enumerate(prose):
        page.drawString(60, 760 - index * 16, line)
    for index, row in enumerate([["型号", "功率", "重量"]] + [[f"ZK-{i}", str(100 + i), "4.5"] for i in range(8)]):
        for column, cell in enumerate(row):
            page.drawString(320 + column * 70, 740 - index * 19, cell)
    page.save()
    doc = parse_file("beside.pdf", buffer.getvalue())
    assert not _tables(doc)
    text = "".join(b.text for b in doc.blocks)
    assert all(line in text for line in prose)


@pytest.mark.django_db
def test_uploaded_borderless_table_pdf_becomes_searchable_table_chunks(kb, alice, client_for,
                                                                     django_capture_on_commit_callbacks) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    data, truth = manual_pdf(ruled=False)
    client = client_for(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/api/kbs/{kb.pk}/documents/", {"files": [SimpleUploadedFile("运维手册.pdf", data)]},
                               format="multipart")
    assert response.status_code == 202, response.content
    from knowledge.models import Document

    doc = Document.objects.get(pk=response.json()["documents"][0]["id"])
    assert doc.status == "ready", doc.error_message
    assert doc.metadata["tables"] == 1
    parts = list(doc.chunks.filter(chunk_type="table").order_by("ordinal"))
    assert all(p.section_path == ["二、日常维护", "1. 巡检", "1.1 服务器清单"] for p in parts)
    assert all(p.content.count("| 序号 | 主机名 | 用途 | 内存（GB） | 负责人 |") == 1 for p in parts)
    assert "| 27 | zk-node-27 | 网页服务 | 16 | 王强 |" in "\n".join(p.content for p in parts)
    found = client.post("/api/search/", {"query": "zk-node-27 网页服务 负责人", "kb_ids": [kb.pk]}, format="json")
    assert found.status_code == 200, found.content
    results = found.json()["results"]
    assert results and any("zk-node-27" in (r.get("content") or r.get("text") or "") for r in results[:3]), results[:3]


# --- spreadsheets as tables ----------------------------------------------------------------------


def _standards_xlsx() -> bytes:
    """A price sheet as offices make them: a merged title row, a grouped two-row header, merged row labels;
    a second sheet of parameters; a third of questions and answers."""
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "住宿标准"
    sheet.append(["2024年住宿标准"])
    sheet.merge_cells("A1:E1")
    sheet.append(["城市类别", "职级", "住宿标准", None, "备注"])
    sheet.append([None, None, "上限（元/晚）", "补助（元/天）", None])
    for cells in ("C2:D2", "A2:A3", "B2:B3", "E2:E3"):
        sheet.merge_cells(cells)
    sheet.append(["一类城市", "总监", 900, 150, "含早餐"])
    sheet.append([None, "经理", 700, 120, None])
    sheet.merge_cells("A4:A5")
    sheet.append(["二类城市", "总监", 700, 120, None])
    params = workbook.create_sheet("设备参数")
    params.append(["型号", "功率（W）", "重量（kg）", "说明"])
    for i in range(1, 61):
        params.append([f"ZK-{i:03d}", 100 + i, 4.5, f"第{i}号设备，适用于机房和办公室，保修三年。"])
    faq = workbook.create_sheet("常见问题")
    faq.append(["问题", "答案"])
    faq.append(["设备多久保修？", "三年。"])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def test_sheet_with_merged_cells_becomes_a_table_with_its_header_and_caption() -> None:
    doc = parse_file("标准.xlsx", _standards_xlsx())
    assert doc.metadata["tables"] == 2 and doc.metadata["faq_count"] == 1
    assert [(b.kind, b.text) for b in doc.blocks if b.kind == "heading"] == [
        ("heading", "住宿标准"), ("heading", "设备参数"), ("heading", "常见问题")]
    table = next(b for b in doc.blocks if b.kind == "table")
    assert [list(row) for row in table.rows] == [
        ["城市类别", "职级", "住宿标准 上限（元/晚）", "住宿标准 补助（元/天）", "备注"],
        ["一类城市", "总监", "900", "150", "含早餐"],
        ["一类城市", "经理", "700", "120", ""],  # the merged 「一类城市」 fills each row it spans
        ["二类城市", "总监", "700", "120", ""],
    ]
    assert table.meta["caption"] == "2024年住宿标准" and table.meta["header_row"] == 2
    (chunk, *_) = [c for c in chunk_document(doc) if c.chunk_type == "table"]
    assert chunk.section_path == ["住宿标准"] and chunk.metadata["caption"] == "2024年住宿标准"
    assert "表格：2024年住宿标准" in chunk.enriched and "字段：城市类别、职级" in chunk.enriched


def test_long_sheet_splits_by_whole_rows_each_part_with_the_header() -> None:
    doc = parse_file("标准.xlsx", _standards_xlsx())
    parts = [c for c in chunk_document(doc) if c.chunk_type == "table" and c.section_path == ["设备参数"]]
    assert len(parts) > 3
    header = "| 型号 | 功率（W） | 重量（kg） | 说明 |"
    assert all(part.content.splitlines()[0] == header for part in parts)
    rows = [line for part in parts for line in part.content.splitlines()[2:]]
    assert rows == [f"| ZK-{i:03d} | {100 + i} | 4.5 | 第{i}号设备，适用于机房和办公室，保修三年。 |" for i in range(1, 61)]
    (faq,) = [c for c in chunk_document(doc) if c.chunk_type == "faq"]
    assert faq.section_path == ["常见问题"] and faq.metadata["question"] == "设备多久保修？"


def test_csv_that_is_not_question_and_answer_is_a_table() -> None:
    text = "价格表（2024年）,,\n型号,单价（元）,库存\nZK-1,100,5\nZK-2,\"1,200\",0\n"
    doc = parse_file("价格.csv", text.encode("gbk"))
    (table,) = _tables(doc)
    assert [list(row) for row in table.rows] == [["型号", "单价（元）", "库存"], ["ZK-1", "100", "5"], ["ZK-2", "1,200", "0"]]
    assert table.meta["caption"] == "价格表（2024年）"
    assert doc.metadata["columns"] == ["型号", "单价（元）", "库存"] and doc.metadata["tables"] == 1
    faq = parse_file("faq.csv", "问题,答案,分类\n怎么退款？,七天内。,售后\n".encode())
    assert [b.kind for b in faq.blocks] == ["faq"]  # a question–answer header keeps the sheet an FAQ


def test_sheet_with_huge_merges_and_no_header_costs_only_its_cells() -> None:
    import re
    import zipfile

    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    for row in ([1, 2, 3], [4, 5, 6], [7, 8, 9]):
        sheet.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    # Two thousand merges over a million rows each, written into the XML (openpyxl itself would make a cell of
    # each): they cost what the sheet's own rows cost, and a merge from an empty cell fills nothing.
    merges = "".join(f'<mergeCell ref="A{n}:XFD1048576"/>' for n in range(10, 2010))
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "xl/worksheets/sheet1.xml":
                data = re.sub(rb"</sheetData>", b"</sheetData><mergeCells count=\"2000\">" + merges.encode() + b"</mergeCells>",
                              data)
            target.writestr(info, data)
    (table,) = _tables(parse_file("numbers.xlsx", out.getvalue()))
    assert [list(row) for row in table.rows] == [["1", "2", "3"], ["4", "5", "6"], ["7", "8", "9"]]


@pytest.mark.django_db
def test_uploaded_sheet_becomes_searchable_table_chunks(kb, ingest) -> None:
    (doc,) = ingest(kb, {"标准.xlsx": _standards_xlsx()})
    assert doc.status == "ready", doc.error_message
    tables = list(doc.chunks.filter(chunk_type="table").order_by("ordinal"))
    assert tables[0].section_path == ["住宿标准"] and "| 一类城市 | 经理 | 700 | 120 |  |" in tables[0].content
    assert all(t.content.startswith("| 型号 |") for t in tables[1:])
