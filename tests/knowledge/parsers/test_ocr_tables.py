"""Borderless tables in OCR'd images and scanned PDF pages, found from the alignment of the recognised boxes
(``knowledge.parsers.ocr_tables``). The images are drawn here with the CJK font (``tests.docgen.table_image``)."""
from __future__ import annotations

import io
import unicodedata

from knowledge.chunking import ChunkingConfig, chunk_document
from knowledge.parsers import parse_file
from tests.docgen import POLICY, png_bytes, scanned_pdf, table_image, text_image

DEVICES = [["设备名称", "型号", "数量", "存放地点"]] + [
    [name, f"ZK-{100 + 10 * i}", str(2 * i + 1), place] for i, (name, place) in enumerate(
        [("投影仪", "三楼会议室"), ("笔记本电脑", "信息部库房"), ("打印机", "二楼办公区"), ("交换机", "一号机房"),
         ("服务器", "二号机房"), ("显示器", "信息部库房"), ("扫描仪", "档案室"), ("路由器", "一号机房"),
         ("摄像头", "前台")])]
DUTY = [["日期", "值班人员", "联系电话"]] + [
    [f"三月{day}日", name, f"1380000{1000 + day}"] for day, name in zip(range(1, 11), "张伟 李娜 王强 刘洋 陈静 杨帆 赵敏 黄磊"
                                                                          " 周杰 吴昊".split(), strict=True)]
BEFORE = ("一、设备清单", "下表列出信息部登记的全部设备。")
AFTER = ("以上设备每季度盘点一次。",)


def _squeezed(rows) -> list[list[str]]:
    """Cells without whitespace, NFKC-normalised (OCR reads full-width punctuation as ASCII)."""
    return [["".join(unicodedata.normalize("NFKC", cell).split()) for cell in row] for row in rows]


def _tables(doc):
    return [b for b in doc.blocks if b.kind == "table"]


def test_borderless_table_in_an_image_is_a_table_cell_by_cell() -> None:
    doc = parse_file("设备清单.png", png_bytes(table_image(DEVICES, before=BEFORE, after=AFTER)))
    (table,) = _tables(doc)
    assert table.meta["ocr"] is True
    assert _squeezed(table.rows) == _squeezed(DEVICES)  # every cell in its row and column
    texts = [b.text for b in doc.blocks if b.kind == "text"]
    assert texts == [BEFORE[1], AFTER[0]]  # no row leaks into the paragraphs, no paragraph into the table
    (chunk,) = [c for c in chunk_document(doc) if c.chunk_type == "table"]
    assert chunk.section_path == [BEFORE[0]] and chunk.metadata["columns"] == DEVICES[0]
    assert chunk.content.splitlines()[0] == "| 设备名称 | 型号 | 数量 | 存放地点 |"


def test_borderless_table_in_a_jpeg_photo_is_a_table() -> None:
    buffer = io.BytesIO()
    table_image(DEVICES[:6], before=BEFORE).save(buffer, format="JPEG", quality=75)
    (table,) = _tables(parse_file("设备清单.jpg", buffer.getvalue()))
    assert _squeezed(table.rows) == _squeezed(DEVICES[:6])


def test_scanned_table_over_a_page_break_is_one_table_split_by_rows_with_its_header() -> None:
    pages = [table_image(DUTY[:6], before=("一、值班安排", "三月上旬的值班人员如下。"), layout=DUTY),
             table_image([DUTY[0]] + DUTY[6:], after=("如需调班请提前一天告知。",), layout=DUTY)]
    doc = parse_file("值班表.pdf", scanned_pdf(pages))
    assert doc.metadata["ocr_pages"] == [1, 2]
    (table,) = _tables(doc)
    assert _squeezed(table.rows) == _squeezed(DUTY)  # the header repeated on page 2 is not a row
    assert (table.page, table.page_end) == (1, 2)
    parts = [c for c in chunk_document(doc, ChunkingConfig(table_max_chars=120)) if c.chunk_type == "table"]
    assert len(parts) > 2
    assert all(part.content.splitlines()[:2] == parts[0].content.splitlines()[:2] for part in parts)
    assert parts[0].content.splitlines()[0] == "| 日期 | 值班人员 | 联系电话 |"
    assert sum(part.metadata["row_count"] for part in parts) == len(DUTY) - 1
    assert all(line.count("|") == 4 for part in parts for line in part.content.splitlines())  # rows kept whole
    assert parts[0].page_start == 1 and parts[-1].page_end == 2
    assert all(part.section_path == ["一、值班安排"] and part.metadata["ocr"] is True for part in parts)


def test_paragraphs_and_forms_in_images_give_no_table() -> None:
    text = POLICY[1][1] + POLICY[4][1]
    prose = [text[i:i + 32] for i in range(0, len(text), 32)]
    doc = parse_file("办法.png", text_image(prose, size=24, width=1000))
    assert not _tables(doc)
    assert "".join(b.text for b in doc.blocks) == text.replace(" ", "")
    form = ["出差申请单", "申请人：张伟          部门：财务部", "出差地点：上海          天数：三天",
            "出差事由：参加年度审计工作会议", "审批人：李娜          日期：三月五日"]
    assert not _tables(parse_file("申请单.png", text_image(form, size=24, width=1000)))
