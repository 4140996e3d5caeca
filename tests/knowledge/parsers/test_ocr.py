"""OCR of images and scanned PDF pages (RapidOCR), through the parsers and through real ingestion and search.

The images are small (a few lines drawn with a CJK font) so that each OCR call takes about a second.
"""
from __future__ import annotations

import io

import pytest
from PIL import Image, ImageDraw

from knowledge.chunking import chunk_document
from knowledge.models import DocumentStatus
from knowledge.parsers import ParseError, parse_file
from tests.docgen import scanned_pdf, text_image

NOTICE = ["一、维护安排", "本周六凌晨两点至四点升级数据库，期间暂停检索服务。", "二、注意事项", "请在周五下班前保存正在编辑的文档。"]
CONTACT = ["三、联系方式", "如有问题请联系运维值班电话八八六六。"]


def _image(lines: list[str]) -> Image.Image:
    return Image.open(io.BytesIO(text_image(lines, size=26, width=900)))


def _shapes() -> Image.Image:
    """A picture without any text: a circle, a filled box and a line."""
    image = Image.new("RGB", (800, 500), "white")
    draw = ImageDraw.Draw(image)
    draw.ellipse((100, 100, 300, 300), outline="black", width=5)
    draw.rectangle((400, 150, 700, 400), fill=(90, 140, 200))
    draw.line((50, 450, 750, 60), fill="red", width=8)
    return image


def _scan() -> bytes:
    return scanned_pdf([_image(NOTICE), _image(CONTACT)])


def test_screenshot_is_read_into_headings_and_paragraphs_with_confidence() -> None:
    doc = parse_file("维护通知.png", text_image(NOTICE, size=26, width=900))
    assert [(b.kind, b.text) for b in doc.blocks] == [
        ("heading", NOTICE[0]), ("text", NOTICE[1]), ("heading", NOTICE[2]), ("text", NOTICE[3])]
    assert doc.metadata["ocr"] is True and doc.metadata["ocr_confidence"] > 0.9
    chunks = chunk_document(doc)
    assert [c.section_path for c in chunks] == [["一、维护安排"], ["二、注意事项"]]
    assert all(c.metadata["ocr"] is True and 0.9 < c.metadata["ocr_confidence"] <= 1 for c in chunks)
    assert all(c.page_start is None for c in chunks)


def test_jpeg_photo_is_read() -> None:
    doc = parse_file("notice.JPG", text_image(CONTACT, size=26, width=900, fmt="JPEG"))
    assert doc.doc_type == "jpeg"
    assert "".join(b.text for b in doc.blocks) == "".join(CONTACT)


def test_image_without_text_is_ocr_failed() -> None:
    buffer = io.BytesIO()
    _shapes().save(buffer, format="PNG")
    with pytest.raises(ParseError) as caught:
        parse_file("diagram.png", buffer.getvalue())
    assert caught.value.code == "ocr_failed"


def test_scanned_pdf_pages_are_recognised_with_progress_per_page() -> None:
    calls: list[tuple[int, int]] = []
    from knowledge.parsers.base import parse_nested
    from knowledge.parsers.types import ParseOptions

    doc = parse_nested("scan.pdf", _scan(), ParseOptions(on_page=lambda done, total: calls.append((done, total))))
    assert calls == [(0, 2), (1, 2), (2, 2)]
    assert doc.metadata["ocr_pages"] == [1, 2] and doc.metadata["ocr_confidence"] > 0.9
    assert [(b.kind, b.text, b.page) for b in doc.blocks] == [
        ("heading", NOTICE[0], 1), ("text", NOTICE[1], 1), ("heading", NOTICE[2], 1), ("text", NOTICE[3], 1),
        ("heading", CONTACT[0], 2), ("text", CONTACT[1], 2)]


def test_blank_scanned_page_is_skipped_but_a_picture_without_text_fails() -> None:
    blank = Image.new("RGB", (900, 300), "white")
    doc = parse_file("scan.pdf", scanned_pdf([_image(CONTACT), blank]))
    assert doc.metadata["blank_pages"] == [2]
    with pytest.raises(ParseError) as caught:
        parse_file("scan.pdf", scanned_pdf([_image(CONTACT), _shapes()]))
    assert (caught.value.code, "page 2" in caught.value.message) == ("ocr_failed", True)


@pytest.mark.django_db
def test_scanned_pdf_uploaded_through_the_api_becomes_searchable_chunks(kb, alice, client_for, monkeypatch,
                                                                       django_capture_on_commit_callbacks) -> None:
    from knowledge.ingestion import claims as recovery

    seen: list[dict] = []
    holds = recovery.still_holds

    def recording(document_id, token, **changes):
        seen.append(changes)
        return holds(document_id, token, **changes)

    monkeypatch.setattr(recovery, "still_holds", recording)
    client = client_for(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/api/kbs/{kb.pk}/documents/",
                               {"files": [_upload("维护通知扫描件.pdf", _scan())]}, format="multipart")
    assert response.status_code == 202, response.content
    (row,) = response.json()["documents"]
    document = client.get(f"/api/kbs/{kb.pk}/documents/{row['id']}/").json()
    assert document["status"] == DocumentStatus.READY, document["error"]
    assert document["metadata"]["ocr_pages"] == [1, 2]
    assert "ingest_stage" not in document["metadata"]
    assert document["progress"]["unit"] == "chunks"
    # While the pages were read, progress counted them.
    ocr_progress = [(c["chunks_done"], c["chunks_total"]) for c in seen if c.get("metadata", {}).get("ingest_stage") == "ocr"]
    assert ocr_progress == [(0, 2), (1, 2), (2, 2)]

    chunks = client.get(f"/api/kbs/{kb.pk}/chunks/", {"document": document["id"]}).json()
    chunks = chunks.get("results", chunks)
    assert chunks and all(c["metadata"]["ocr"] is True and c["metadata"]["ocr_confidence"] > 0.9 for c in chunks)
    found = client.post("/api/search/", {"query": "数据库升级期间暂停服务吗", "kb_ids": [kb.pk]}, format="json").json()
    assert found["results"][0]["section_path"] == ["一、维护安排"]
    assert found["results"][0]["pages"] == {"start": 1, "end": 1}


@pytest.mark.django_db
def test_scanned_pdf_with_an_unreadable_page_fails_with_a_code(kb, ingest) -> None:
    (document,) = ingest(kb, {"scan.pdf": scanned_pdf([_image(CONTACT), _shapes()])})
    assert document.status == DocumentStatus.FAILED
    assert document.error_code == "ocr_failed" and "page 2" in document.error_message
    assert not document.chunks.exists()


def _upload(name: str, data: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="application/pdf")


def _table_image(rows: list[list[str]]) -> bytes:
    """A ruled table drawn with the CJK font, as in a screenshot of a spreadsheet."""
    from PIL import ImageFont

    from tests.docgen import cjk_font_path

    font = ImageFont.truetype(cjk_font_path(), 24)
    widths, height, margin = [150, 220, 160], 48, 20
    image = Image.new("RGB", (sum(widths) + 2 * margin, height * len(rows) + 2 * margin + 60), "white")
    draw = ImageDraw.Draw(image)
    draw.text((margin, 15), "住宿标准如下表", font=font, fill="black")
    top = margin + 50
    for r, row in enumerate(rows):
        x = margin
        for c, text in enumerate(row):
            draw.rectangle((x, top + r * height, x + widths[c], top + (r + 1) * height), outline="black", width=2)
            draw.text((x + 12, top + r * height + 10), text, font=font, fill="black")
            x += widths[c]
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def test_ruled_table_in_an_image_is_read_as_a_table() -> None:
    rows = [["城市类别", "职级", "住宿上限"], ["一类城市", "经理", "700"], ["二类城市", "专员", "400"]]
    doc = parse_file("标准.png", _table_image(rows))
    assert [b.kind for b in doc.blocks] == ["text", "table"]
    (table,) = [b for b in doc.blocks if b.kind == "table"]
    assert [list(row) for row in table.rows] == rows
    (chunk,) = [c for c in chunk_document(doc) if c.chunk_type == "table"]
    assert chunk.metadata["columns"] == rows[0] and chunk.metadata["ocr"] is True


def test_pdf_with_a_text_page_and_a_scanned_page_reads_both() -> None:
    from pypdf import PdfReader, PdfWriter

    from tests.docgen import policy_pdf

    text_pdf, _ = policy_pdf()
    writer = PdfWriter()
    writer.add_page(PdfReader(io.BytesIO(text_pdf)).pages[0])
    contact = ["一、联系方式", CONTACT[1]]
    writer.add_page(PdfReader(io.BytesIO(scanned_pdf([_image(contact)]))).pages[0])
    buffer = io.BytesIO()
    writer.write(buffer)
    doc = parse_file("mixed.pdf", buffer.getvalue())
    assert doc.metadata["ocr_pages"] == [2]
    chunks = chunk_document(doc)
    assert not any(c.metadata.get("ocr") for c in chunks if c.page_start == 1)
    (scanned,) = [c for c in chunks if c.page_start == 2 and c.chunk_type == "text"]
    assert scanned.content == CONTACT[1] and scanned.metadata["ocr"] is True
    assert scanned.section_path == ["第五章 附则", "一、联系方式"]  # an article (第九条) opens no section


@pytest.mark.django_db
def test_image_ingests_into_ocr_chunks_without_pages(kb, ingest) -> None:
    (document,) = ingest(kb, {"维护通知.png": text_image(NOTICE, size=26, width=900)})
    assert document.status == DocumentStatus.READY, document.error_message
    assert document.doc_type == "png" and document.metadata["ocr"] is True
    chunks = list(document.chunks.order_by("ordinal"))
    assert [c.section_path for c in chunks] == [["一、维护安排"], ["二、注意事项"]]
    assert all(c.page_start is None and c.metadata["ocr"] is True for c in chunks)
