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
    assert chunk.section_path == ["第三章 费用标准", "第五条"]
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
