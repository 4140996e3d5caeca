"""Tests for knowledge.parsers: every format built for real with its library, plus the failure codes."""
from __future__ import annotations

import io
import random
import zipfile
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime

import docx
import openpyxl
import pytest
from docx.enum.style import WD_STYLE_TYPE
from docx.oxml import OxmlElement, parse_xml
from docx.oxml.ns import nsdecls, qn
from fpdf import FPDF

from knowledge.chunking import chunk_document
from knowledge.parsers import SUPPORTED_EXTENSIONS, Block, ParsedDocument, ParseError, parse_file
from knowledge.parsers.decoding import decode_text
from knowledge.parsers.pdf import split_paragraphs


def _code(filename: str, data: bytes, **kwargs: int) -> str:
    with pytest.raises(ParseError) as caught:
        parse_file(filename, data, **kwargs)
    assert caught.value.message
    return caught.value.code


def _kinds(doc: ParsedDocument) -> list[tuple[str, str]]:
    return [(b.kind, b.text) for b in doc.blocks]


# --- fixtures built with the real libraries ------------------------------------------------


def _docx_bytes() -> bytes:
    document = docx.Document()
    document.core_properties.title = "员工手册"
    document.core_properties.author = "人事部"
    document.add_paragraph("前言：本手册由人事部维护。")
    document.add_heading("第一章 总则", level=1)
    document.add_paragraph("本手册适用于全体员工。")
    document.add_heading("1.1 目的", level=2)
    document.add_paragraph("规范员工行为。")
    table = document.add_table(rows=3, cols=2)
    values_by_row = [("项目", "说明"), ("工作时间", "9:00-18:00"), ("午休", "12:00-13:00")]
    for row, values in zip(table.rows, values_by_row, strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.add_paragraph("表格之后的段落。")
    chinese_heading = document.styles.add_style("标题 3", WD_STYLE_TYPE.PARAGRAPH)
    document.add_paragraph("1.1.1 细则", style=chinese_heading)
    document.add_paragraph("细则正文。")
    outlined = document.add_paragraph("第二章 考勤")
    outline_level = OxmlElement("w:outlineLvl")
    outline_level.set(qn("w:val"), "0")
    outlined._p.get_or_add_pPr().append(outline_level)
    document.add_paragraph("   ")  # blank paragraphs are dropped
    document.add_paragraph("迟到三次记一次旷工。")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _pdf_bytes() -> bytes:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    pdf.add_page()
    pdf.start_section("Introduction")
    pdf.cell(0, 10, "Introduction", new_x="LMARGIN", new_y="NEXT")
    pdf.multi_cell(0, 6, "The quick brown fox jumps over the lazy dog. " * 8)
    pdf.ln(4)
    pdf.multi_cell(0, 6, "A second paragraph on page one. It ends here.")
    pdf.add_page()
    pdf.start_section("Details")
    pdf.cell(0, 10, "Details", new_x="LMARGIN", new_y="NEXT")
    pdf.start_section("Fine print", level=1)
    pdf.cell(0, 10, "Fine print", new_x="LMARGIN", new_y="NEXT")
    pdf.multi_cell(0, 6, "Page two explains the details. " * 6)
    return bytes(pdf.output())


def _xlsx_bytes() -> bytes:
    workbook = openpyxl.Workbook()
    first = workbook.active
    first.title = "常见问题"
    first.append(["Category", "Question", "Answer"])
    first.append(["账户", "如何重置密码？", "在登录页点击“忘记密码”。"])
    first.append([None, None, None])
    first.append(["订单", "多久发货？", 2])
    second = workbook.create_sheet("其他")
    second.append(["营业时间？", "工作日 9:00-18:00"])
    workbook.create_sheet("空表")
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def _eml_bytes(*, html_only: bool = False) -> bytes:
    message = EmailMessage()
    message["Subject"] = "季度报告：请查收"
    message["From"] = "张三 <zhangsan@example.com>"
    message["To"] = "李四 <lisi@example.com>"
    message["Date"] = format_datetime(datetime(2024, 5, 6, 9, 30, tzinfo=UTC))
    if html_only:
        message.set_content("<html><body><h2>摘要</h2><p>收入增长<b>20%</b>。</p></body></html>", subtype="html")
    else:
        message.set_content("各位好：\n\n附件是季度报告，请查收。\n\n张三")
    attachment = "# 季度报告\n\n## 收入\n\n收入增长 20%。\n".encode()
    message.add_attachment(attachment, maintype="text", subtype="markdown", filename="报告.md")
    message.add_attachment(b"GIF89a" + b"\x00" * 32, maintype="image", subtype="gif", filename="logo.gif")
    message.add_attachment(b"%PDF-1.4\ngarbage", maintype="application", subtype="pdf", filename="broken.pdf")
    return message.as_bytes()


# --- dispatch and errors ---------------------------------------------------------------------


def test_supported_extensions_map_to_doc_types() -> None:
    assert SUPPORTED_EXTENSIONS[".md"] == "markdown"
    assert SUPPORTED_EXTENSIONS[".htm"] == "html"
    assert set(SUPPORTED_EXTENSIONS.values()) == {
        "markdown", "text", "html", "docx", "pdf", "csv", "xlsx", "eml", "jsonl", "pptx", "png", "jpeg",
        "doc", "wps", "rtf", "odt", "xls", "et", "ods", "ppt", "dps", "odp",
    }


def test_unknown_extension_is_unsupported_type() -> None:
    assert _code("slides.key", b"\xd0\xcf\x11\xe0") == "unsupported_type"
    assert _code("README", b"hello") == "unsupported_type"


def test_extension_is_case_insensitive_and_path_is_ignored() -> None:
    doc = parse_file("C:\\Users\\王\\笔记.TXT", "你好。".encode())
    assert doc.doc_type == "text"
    assert doc.title == "笔记"


@pytest.mark.parametrize("filename", ["a.txt", "a.md", "a.pdf", "a.docx", "a.csv"])
def test_empty_data_is_empty_file(filename: str) -> None:
    assert _code(filename, b"") == "empty_file"


def test_whitespace_only_content_is_empty_file() -> None:
    assert _code("a.md", b"  \n\t\n") == "empty_file"
    assert _code("a.txt", "\u3000\n  ".encode("utf-16")) == "empty_file"
    assert _code("a.html", b"<html><body><script>var x;</script></body></html>") == "empty_file"


def test_pdf_without_header_is_type_mismatch() -> None:
    assert _code("report.pdf", b"this is not a pdf at all") == "type_mismatch"


def test_docx_that_is_not_a_zip_is_type_mismatch() -> None:
    assert _code("report.docx", "纯文本冒充的文档".encode()) == "type_mismatch"


def test_xlsx_named_docx_is_type_mismatch() -> None:
    assert _code("faq.docx", _xlsx_bytes()) == "type_mismatch"


def test_text_with_nul_bytes_is_type_mismatch() -> None:
    assert _code("notes.txt", b"abc\x00\x01\x02def\x00\x00\x00\x00\xff") == "type_mismatch"


def test_binary_renamed_to_text_is_type_mismatch() -> None:
    assert _code("notes.md", _pdf_bytes()) == "type_mismatch"
    assert _code("notes.txt", _docx_bytes()) == "type_mismatch"


def test_pdf_with_garbage_after_header_is_corrupt_file() -> None:
    garbage = bytes(random.Random(7).randrange(256) for _ in range(4000))
    assert _code("report.pdf", b"%PDF-1.7\n" + garbage) == "corrupt_file"


def test_truncated_docx_is_corrupt_file() -> None:
    data = _docx_bytes()
    assert _code("report.docx", data[: len(data) // 2]) == "corrupt_file"


def test_docx_with_garbage_parts_is_corrupt_file() -> None:
    buffer = io.BytesIO()
    rng = random.Random(3)
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("[Content_Types].xml", bytes(rng.randrange(256) for _ in range(300)))
        archive.writestr("word/document.xml", bytes(rng.randrange(256) for _ in range(300)))
    assert _code("report.docx", buffer.getvalue()) == "corrupt_file"


def test_zip_bomb_by_ratio_is_archive_bomb() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        with archive.open("word/document.xml", "w") as member:
            for _ in range(12):  # 12 MB of zeros packs into a few KB
                member.write(b"\0" * (1024 * 1024))
    assert len(buffer.getvalue()) < 200_000
    assert _code("bomb.docx", buffer.getvalue()) == "archive_bomb"


def test_zip_over_size_limit_is_archive_bomb() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("xl/workbook.xml", random.Random(1).randbytes(300_000))
    assert _code("big.xlsx", buffer.getvalue(), max_unzipped_bytes=200_000) == "archive_bomb"
    # The same file is fine under the default limit (and then fails later, as a broken workbook).
    assert _code("big.xlsx", buffer.getvalue()) == "corrupt_file"


def test_normal_docx_passes_the_bomb_check_with_tight_ratio() -> None:
    doc = parse_file("ok.docx", _docx_bytes(), max_zip_ratio=1)  # ratio only applies above 10 MB
    assert doc.doc_type == "docx"


@pytest.mark.parametrize("extension", sorted(SUPPORTED_EXTENSIONS))
def test_random_bytes_only_ever_raise_parse_error(extension: str) -> None:
    rng = random.Random(extension)
    prefixes = {".pdf": b"%PDF-1.4\n", ".docx": b"PK\x03\x04", ".xlsx": b"PK\x03\x04", ".pptx": b"PK\x03\x04",
                ".png": b"\x89PNG\r\n\x1a\n", ".jpg": b"\xff\xd8\xff\xe0", ".jpeg": b"\xff\xd8\xff\xe0"}
    for _ in range(5):
        data = prefixes.get(extension, b"") + rng.randbytes(rng.randrange(1, 600))
        try:
            parse_file(f"fuzz{extension}", data)
        except ParseError as error:
            assert error.code in {"corrupt_file", "type_mismatch", "undecodable_text", "empty_file", "ocr_failed"}


def test_parse_error_rejects_unknown_codes() -> None:
    with pytest.raises(ValueError):
        ParseError("oops", "not a real code")


# --- plain text ------------------------------------------------------------------------------


def test_gbk_text_is_decoded_as_gb18030() -> None:
    doc = parse_file("公告.txt", "第一段：系统维护通知。\r\n\r\n第二段，请提前保存工作。".encode("gbk"))
    assert doc.metadata["encoding"] == "gb18030"
    assert _kinds(doc) == [("text", "第一段：系统维护通知。"), ("text", "第二段，请提前保存工作。")]
    assert doc.title == "公告"


def test_utf16_with_bom_is_decoded() -> None:
    doc = parse_file("a.txt", "统一码文本。\n\n第二段。".encode("utf-16"))
    assert doc.metadata["encoding"] == "utf-16"
    assert [b.text for b in doc.blocks] == ["统一码文本。", "第二段。"]


def test_utf16_without_bom_is_recognised() -> None:
    doc = parse_file("a.txt", "hello 世界\n\nsecond".encode("utf-16-le"))
    assert doc.metadata["encoding"] == "utf-16-le"
    assert [b.text for b in doc.blocks] == ["hello 世界", "second"]


def test_utf8_bom_is_stripped() -> None:
    doc = parse_file("a.txt", "\ufeff带 BOM 的文本".encode())
    assert doc.metadata["encoding"] == "utf-8-sig"
    assert doc.blocks[0].text == "带 BOM 的文本"


def test_lines_in_a_paragraph_stay_together() -> None:
    doc = parse_file("a.txt", "第一行\n第二行\n   \n第三行".encode())
    assert [b.text for b in doc.blocks] == ["第一行\n第二行", "第三行"]


def test_undecodable_text() -> None:
    assert _code("a.txt", b"\x01\x02\x03 data \xff\xfe\x80 more") == "undecodable_text"


# Wrong encodings are never stored as mojibake (issue 8): a confident reading or undecodable_text.
JAPANESE = ("吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。"
            "何でも薄暗いじめじめした所でニャーニャー泣いていた事だけは記憶している。\n")
FRENCH = "Résumé de la réunion du comité.\n\nLes élèves ont réussi l'examen.\n"
GERMAN = "Die Größe der Straße ist überraschend. Mädchen und Jungen spielen fröhlich im Garten. Schöne Grüße aus München.\n"


@pytest.mark.parametrize("text", [JAPANESE, "日本語のテキストです。これは東京の天気予報です。明日は晴れるでしょう。\n"])
def test_shift_jis_japanese_is_not_read_as_gb18030(text) -> None:
    decoded, encoding = decode_text(text.encode("shift_jis"))
    assert encoding != "gb18030"
    assert decoded == text and encoding in ("cp932", "shift_jis")


@pytest.mark.parametrize("text", [FRENCH, GERMAN])
def test_latin1_european_text_is_decoded_as_written(text) -> None:
    decoded, encoding = decode_text(text.encode("latin-1"))
    assert decoded == text, encoding


@pytest.mark.parametrize("text", [
    "Café crème brûlée.\n",
    "Naïve façade, déjà vu, señor, Ångström.\n",
    "Größe: 12 cm, Gewicht: 3 kg. Übergröße möglich.\n",
])
def test_short_latin1_text_that_would_be_misread_is_undecodable(text) -> None:
    # cp1250/cp1257/GB18030 all decode these "cleanly" but differently: refused, not stored misread.
    assert _code("notes.txt", text.encode("latin-1")) == "undecodable_text"


@pytest.mark.parametrize("text", [
    "第一段：系统维护通知。\n\n第二段，请提前保存工作。",
    "知识库“平台”——支持上传…文档《手册》【注意】①②",
    "知识库平台支持上传文档，自动切分段落并建立索引。用户可以通过搜索和问答快速找到答案。\n" * 3,
])
def test_gbk_chinese_is_still_gb18030(text) -> None:
    assert decode_text(text.encode("gbk")) == (text, "gb18030")


def test_utf16_with_bom_and_big5_are_decoded() -> None:
    assert decode_text("知库 Größe 日本語\r\n第二行".encode("utf-16")) == ("知库 Größe 日本語\n第二行", "utf-16")
    assert decode_text("繁體中文的測試文字，這是臺灣的資料。".encode("big5")) == ("繁體中文的測試文字，這是臺灣的資料。", "big5")


def test_utf8_with_one_bad_byte_is_not_read_as_gbk() -> None:
    text, encoding = decode_text(("这是一段很长的中文文本。" * 20).encode() + b"\xe4")
    assert text.startswith("这是一段很长的中文文本。")
    assert encoding.startswith("utf-8")


# --- markdown --------------------------------------------------------------------------------


MARKDOWN = """---
title: 前置标题
---
# 产品手册

简介段落，
同一段的第二行。

## 安装

1. 下载安装包
2. 运行 `setup.exe`
   - 选择目录

```bash
pip install zhiku
```

| 参数 | 说明 |
| --- | --- |
| host | 主机地址 |
| port | 端口 |

### 常见错误

> 如遇问题请联系管理员。
"""


def test_markdown_blocks_in_order() -> None:
    doc = parse_file("manual.md", MARKDOWN.encode())
    assert doc.title == "产品手册"
    assert [b.level for b in doc.blocks if b.kind == "heading"] == [1, 2, 3]
    texts = [b.text for b in doc.blocks if b.kind == "text"]
    assert texts == [
        "简介段落，\n同一段的第二行。",
        "1. 下载安装包",
        "2. 运行 setup.exe",
        "  - 选择目录",
        "pip install zhiku",
        "如遇问题请联系管理员。",
    ]
    table = next(b for b in doc.blocks if b.kind == "table")
    assert table.rows == (("参数", "说明"), ("host", "主机地址"), ("port", "端口"))
    assert table.text.splitlines()[0] == "| 参数 | 说明 |"
    assert "title: 前置标题" not in "".join(b.text for b in doc.blocks)


def test_markdown_title_falls_back_to_front_matter_then_stem() -> None:
    assert parse_file("n.md", "---\ntitle: '前置'\n---\n正文".encode()).title == "前置"
    assert parse_file("笔记.md", "## 二级\n正文".encode()).title == "笔记"


def test_markdown_html_table_becomes_table_block() -> None:
    doc = parse_file("a.md", "<table><tr><th>名</th><th>值</th></tr><tr><td>a</td><td>1</td></tr></table>\n".encode())
    assert doc.blocks[0].kind == "table"
    assert doc.blocks[0].rows == (("名", "值"), ("a", "1"))


# --- HTML ------------------------------------------------------------------------------------


HTML = """<!doctype html>
<html><head><meta charset="gbk"><title>帮助中心</title><style>p{color:red}</style></head>
<body>
<nav><a href="/">首页</a> | <a href="/help">帮助</a></nav>
<h1>账户</h1>
<p>注册账户需要
手机号。</p>
<div>直接写在 div 里的文字<br>第二行<p>内部段落</p></div>
<script>alert("x")</script>
<h2>费用</h2>
<table><caption>价格表</caption>
<tr><th>套餐</th><th>价格</th></tr>
<tr><td>基础版</td><td>免费</td></tr>
<tr><td>专业版</td><td>99 元</td></tr>
</table>
<ul><li>支持退款</li><li>支持发票</li></ul>
</body></html>"""


def test_html_structure_and_dropped_elements() -> None:
    doc = parse_file("help.html", HTML.encode("gbk"))
    assert doc.title == "帮助中心"
    assert doc.metadata["encoding"] == "gb18030"
    assert _kinds(doc)[:5] == [
        ("heading", "账户"),
        ("text", "注册账户需要手机号。"),
        ("text", "直接写在 div 里的文字\n第二行"),
        ("text", "内部段落"),
        ("heading", "费用"),
    ]
    table = doc.blocks[5]
    assert table.kind == "table"
    assert table.rows == (("套餐", "价格"), ("基础版", "免费"), ("专业版", "99 元"))
    assert table.meta == {"caption": "价格表"}
    assert [b.text for b in doc.blocks[6:]] == ["支持退款", "支持发票"]
    everything = " ".join(b.text for b in doc.blocks)
    assert "首页" not in everything and "alert" not in everything and "color" not in everything


def test_html_title_falls_back_to_first_h1() -> None:
    doc = parse_file("page.htm", "<body><h1>标题一</h1><p>正文</p></body>".encode())
    assert doc.title == "标题一"


# --- DOCX ------------------------------------------------------------------------------------


def test_docx_paragraphs_and_tables_in_document_order() -> None:
    doc = parse_file("handbook.docx", _docx_bytes())
    assert doc.title == "员工手册"
    assert doc.metadata["author"] == "人事部"
    assert [(b.kind, b.level, b.text) for b in doc.blocks if b.kind != "table"] == [
        ("text", 0, "前言：本手册由人事部维护。"),
        ("heading", 1, "第一章 总则"),
        ("text", 0, "本手册适用于全体员工。"),
        ("heading", 2, "1.1 目的"),
        ("text", 0, "规范员工行为。"),
        ("text", 0, "表格之后的段落。"),
        ("heading", 3, "1.1.1 细则"),
        ("text", 0, "细则正文。"),
        ("heading", 1, "第二章 考勤"),
        ("text", 0, "迟到三次记一次旷工。"),
    ]
    kinds = [b.kind for b in doc.blocks]
    table_at = kinds.index("table")
    assert doc.blocks[table_at - 1].text == "规范员工行为。"
    assert doc.blocks[table_at + 1].text == "表格之后的段落。"
    table = doc.blocks[table_at]
    assert table.rows == (("项目", "说明"), ("工作时间", "9:00-18:00"), ("午休", "12:00-13:00"))
    assert table.text == "| 项目 | 说明 |\n| --- | --- |\n| 工作时间 | 9:00-18:00 |\n| 午休 | 12:00-13:00 |"


def test_docx_section_paths_through_the_chunker() -> None:
    chunks = chunk_document(parse_file("handbook.docx", _docx_bytes()))
    paths = {c.content.splitlines()[0]: c.section_path for c in chunks}
    assert paths["前言：本手册由人事部维护。"] == []
    assert paths["本手册适用于全体员工。"] == ["第一章 总则"]
    assert paths["| 项目 | 说明 |"] == ["第一章 总则", "1.1 目的"]
    assert paths["细则正文。"] == ["第一章 总则", "1.1 目的", "1.1.1 细则"]
    assert paths["迟到三次记一次旷工。"] == ["第二章 考勤"]


def test_docx_text_inside_content_controls_is_kept() -> None:
    document = docx.Document()
    document.add_heading("合同", level=1)
    document.element.body.insert(1, parse_xml(
        f'<w:sdt {nsdecls("w")}><w:sdtContent><w:p><w:r><w:t>甲方：某公司</w:t></w:r></w:p></w:sdtContent></w:sdt>'
    ))
    document.add_paragraph("乙方：个人")
    buffer = io.BytesIO()
    document.save(buffer)
    assert [b.text for b in parse_file("c.docx", buffer.getvalue()).blocks] == ["合同", "甲方：某公司", "乙方：个人"]


def test_docx_title_falls_back_to_first_heading() -> None:
    document = docx.Document()
    document.add_heading("没有元数据标题", level=1)
    document.add_paragraph("正文")
    buffer = io.BytesIO()
    document.save(buffer)
    assert parse_file("x.docx", buffer.getvalue()).title == "没有元数据标题"


# --- PDF -------------------------------------------------------------------------------------


def test_pdf_pages_paragraphs_and_outline_headings() -> None:
    doc = parse_file("guide.pdf", _pdf_bytes())
    assert doc.metadata["pages"] == 2
    assert doc.title == "Introduction"
    assert [(b.kind, b.level, b.page) for b in doc.blocks] == [
        ("heading", 1, 1),
        ("text", 0, 1),
        ("text", 0, 1),
        ("heading", 1, 2),
        ("heading", 2, 2),
        ("text", 0, 2),
    ]
    assert doc.blocks[0].text == "Introduction"
    first = doc.blocks[1].text
    assert first.startswith("The quick brown fox") and first.endswith("lazy dog.")
    assert "\n" not in first and first.count("quick brown fox") == 8
    assert doc.blocks[2].text == "A second paragraph on page one. It ends here."
    assert doc.blocks[4].text == "Fine print"


def test_pdf_chunks_keep_page_numbers() -> None:
    chunks = chunk_document(parse_file("guide.pdf", _pdf_bytes()))
    assert [(c.section_path, c.page_start, c.page_end) for c in chunks] == [
        (["Introduction"], 1, 1),
        (["Details", "Fine print"], 2, 2),
    ]


def test_pdf_with_user_password_is_corrupt_file_saying_encrypted() -> None:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    pdf.add_page()
    pdf.cell(0, 10, "secret")
    pdf.set_encryption(owner_password="owner", user_password="user")
    with pytest.raises(ParseError) as caught:
        parse_file("secret.pdf", bytes(pdf.output()))
    assert caught.value.code == "corrupt_file"
    assert "encrypted" in caught.value.message


def test_pdf_encrypted_without_user_password_opens() -> None:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    pdf.add_page()
    pdf.cell(0, 10, "readable text")
    pdf.set_encryption(owner_password="owner")
    doc = parse_file("open.pdf", bytes(pdf.output()))
    assert doc.metadata["encrypted"] is True
    assert doc.blocks[0].text == "readable text"


def test_pdf_without_text_is_empty_file() -> None:
    pdf = FPDF()
    pdf.add_page()
    pdf.rect(10, 10, 50, 50)
    assert _code("scan.pdf", bytes(pdf.output())) == "empty_file"


def test_pdf_paragraph_heuristics_join_cjk_lines_without_spaces() -> None:
    text = "第一段的第一行文字比较长一些\n第一段的第二行结束。\n第二段只有一行\n"
    assert split_paragraphs(text) == ["第一段的第一行文字比较长一些第一段的第二行结束。", "第二段只有一行"]
    assert split_paragraphs("a long line of english text that is hyphen-\nated across lines.") == [
        "a long line of english text that is hyphenated across lines."
    ]


# --- CSV / XLSX ------------------------------------------------------------------------------


def test_csv_with_chinese_headers_in_gbk() -> None:
    data = "分类,问题,答案\n售后,怎么退款？,联系客服，七天内可退。\n,,\n售前,有发票吗？,有\n".encode("gbk")
    doc = parse_file("faq.csv", data)
    assert doc.metadata["encoding"] == "gb18030"
    assert [(b.kind, b.meta["question"], b.meta["answer"]) for b in doc.blocks] == [
        ("faq", "怎么退款？", "联系客服，七天内可退。"),
        ("faq", "有发票吗？", "有"),
    ]
    assert doc.blocks[0].text == "问：怎么退款？\n答：联系客服，七天内可退。"
    assert doc.blocks[0].meta["fields"] == {"分类": "售后"}
    assert doc.blocks[1].meta["row"] == 4


def test_csv_without_header_uses_first_two_columns() -> None:
    doc = parse_file("faq.csv", "营业时间？,9点到6点\n地址在哪？,北京\n".encode())
    pairs = [(b.meta["question"], b.meta["answer"]) for b in doc.blocks]
    assert pairs == [("营业时间？", "9点到6点"), ("地址在哪？", "北京")]


def test_csv_with_english_headers_and_semicolons() -> None:
    doc = parse_file("faq.csv", b"ANSWER;Q\nYes, we ship abroad.;Do you ship abroad?\n")
    assert doc.blocks[0].meta["question"] == "Do you ship abroad?"
    assert doc.blocks[0].meta["answer"] == "Yes, we ship abroad."


def test_xlsx_all_sheets_with_and_without_headers() -> None:
    doc = parse_file("faq.xlsx", _xlsx_bytes())
    assert doc.doc_type == "xlsx"
    assert doc.metadata["sheets"] == ["常见问题", "其他"]
    assert [(b.kind, b.text) for b in doc.blocks] == [
        ("heading", "常见问题"),
        ("faq", "问：如何重置密码？\n答：在登录页点击“忘记密码”。"),
        ("faq", "问：多久发货？\n答：2"),
        ("heading", "其他"),
        ("faq", "问：营业时间？\n答：工作日 9:00-18:00"),
    ]
    assert doc.blocks[1].meta["fields"] == {"Category": "账户"}
    assert doc.blocks[4].meta["sheet"] == "其他"


# --- EML -------------------------------------------------------------------------------------


def test_eml_body_metadata_and_attachments() -> None:
    doc = parse_file("mail.eml", _eml_bytes())
    assert doc.title == "季度报告：请查收"
    assert doc.metadata["from"] == "张三 <zhangsan@example.com>"
    assert doc.metadata["to"] == "李四 <lisi@example.com>"
    assert doc.metadata["date"] == "2024-05-06T09:30:00+00:00"
    assert doc.metadata["skipped_attachments"] == ["logo.gif"]
    assert doc.metadata["failed_attachments"][0]["name"] == "broken.pdf"
    assert doc.metadata["failed_attachments"][0]["code"] == "corrupt_file"
    assert [(b.kind, b.level, b.text) for b in doc.blocks] == [
        ("text", 0, "各位好："),
        ("text", 0, "附件是季度报告，请查收。"),
        ("text", 0, "张三"),
        ("heading", 1, "报告.md"),
        ("heading", 2, "季度报告"),
        ("heading", 3, "收入"),
        ("text", 0, "收入增长 20%。"),
    ]
    assert all(b.meta.get("attachment") == "报告.md" for b in doc.blocks[3:])
    chunks = chunk_document(doc)
    assert chunks[-1].section_path == ["报告.md", "季度报告", "收入"]


def test_eml_html_body_goes_through_the_html_parser() -> None:
    doc = parse_file("mail.eml", _eml_bytes(html_only=True))
    assert _kinds(doc)[:2] == [("heading", "摘要"), ("text", "收入增长20%。")]


def test_eml_without_headers_is_type_mismatch() -> None:
    assert _code("mail.eml", "这只是一段文字\n没有邮件头".encode()) == "type_mismatch"


# --- JSON Lines ------------------------------------------------------------------------------


def test_jsonl_records_become_headings_text_and_meta() -> None:
    lines = [
        '{"title": "退货政策", "content": "七天无理由退货。", "url": "https://example.com/r", "id": 1}',
        "",
        '{"body": "没有标题的记录。", "tags": ["a", "b"]}',
        '{"question": "能开发票吗？", "answer": "可以。"}',
    ]
    doc = parse_file("kb.jsonl", "\n".join(lines).encode())
    assert doc.metadata["records"] == 3
    assert doc.blocks == [
        Block(kind="heading", text="退货政策", level=2, meta={"url": "https://example.com/r", "id": 1}),
        Block(kind="text", text="七天无理由退货。", meta={"url": "https://example.com/r", "id": 1}),
        Block(kind="text", text="没有标题的记录。", meta={"tags": ["a", "b"]}),
        Block(kind="faq", text="问：能开发票吗？\n答：可以。", meta={"question": "能开发票吗？", "answer": "可以。"}),
    ]


def test_jsonl_bad_line_reports_its_number() -> None:
    with pytest.raises(ParseError) as caught:
        parse_file("kb.jsonl", b'{"text": "ok"}\n{"text": \n')
    assert caught.value.code == "corrupt_file"
    assert caught.value.message.startswith("line 2:")


def test_jsonl_non_object_line_is_corrupt_file() -> None:
    with pytest.raises(ParseError) as caught:
        parse_file("kb.jsonl", b'{"text": "ok"}\n[1, 2]\n')
    assert caught.value.message.startswith("line 2:")
