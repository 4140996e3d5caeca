"""Legacy Office, RTF, OpenDocument and WPS files, converted by LibreOffice headless (knowledge/parsers/legacy.py).

The files are made in the test: python-docx, openpyxl and python-pptx write the modern twins, LibreOffice converts
them to the legacy format (a WPS ``.wps``/``.et``/``.dps`` is the Word/Excel/PowerPoint 97 binary under WPS's
name, as WPS Office writes them), then the platform converts them back. A conversion takes a few seconds.
"""
from __future__ import annotations

import glob
import io
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from knowledge.chunking import chunk_document
from knowledge.models import DocumentStatus
from knowledge.parsers import ParseError, parse_file
from knowledge.parsers.base import parse_nested
from knowledge.parsers.budget import ResourceLimit
from knowledge.parsers.types import ParseOptions

pytestmark = pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice is not installed "
                                                                        "(scripts/ensure_libreoffice.sh)")

POLICY = [("heading", "差旅费管理办法"), ("text", "第一条 为规范公司员工出差管理，合理控制差旅费用，制定本办法。"),
          ("text", "第二条 员工出差乘坐火车的，可以乘坐二等座；乘坐飞机的，一律乘坐经济舱。"),
          ("text", "第三条 住宿费按照出差城市的标准报销，一线城市每晚不超过六百元。")]


def soffice_convert(data: bytes, source_ext: str, target: str) -> bytes:
    """``data`` (a ``source_ext`` file) converted to ``target`` by LibreOffice, as the test's own fixture maker."""
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / f"in.{source_ext}"
        source.write_bytes(data)
        subprocess.run(["soffice", "--headless", f"-env:UserInstallation={Path(folder, 'p').as_uri()}",
                        "--convert-to", target, "--outdir", folder, str(source)],
                       check=True, capture_output=True, timeout=120)
        return (Path(folder) / f"in.{target}").read_bytes()


def policy_docx() -> bytes:
    import docx

    document = docx.Document()
    for kind, text in POLICY:
        document.add_heading(text, 1) if kind == "heading" else document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def faq_workbook() -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["问题", "答案"])
    sheet.append(["年假有几天？", "入职满一年的员工享有五天带薪年假。"])
    sheet.append(["病假怎么请？", "在系统里提交病假申请并上传医院证明。"])
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def deck() -> bytes:
    from pptx import Presentation

    presentation = Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])
    slide.shapes.title.text = "季度经营总结"
    slide.placeholders[1].text = "第三季度收入同比增长百分之二十，新增客户一百二十家。"
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def legacy_doc() -> bytes:
    return soffice_convert(policy_docx(), "docx", "doc")


def _kinds(doc) -> list[tuple[str, str]]:
    return [(block.kind, block.text) for block in doc.blocks]


@pytest.mark.parametrize("name", ["差旅办法.doc", "差旅办法.wps"])
def test_doc_and_wps_are_converted_and_read_as_word(legacy_doc: bytes, name: str) -> None:
    doc = parse_file(name, legacy_doc)
    assert doc.doc_type == name.rsplit(".", 1)[1]
    assert _kinds(doc) == POLICY
    assert doc.title == "差旅费管理办法"
    assert doc.metadata["converted_from"] == doc.doc_type and doc.metadata["converted_to"] == "docx"
    assert doc.metadata["conversion_seconds"] > 0
    chunks = chunk_document(doc)
    assert chunks and all(chunk.section_path == ["差旅费管理办法"] for chunk in chunks)


@pytest.mark.parametrize(("source", "ext", "make"), [("xlsx", "xls", faq_workbook), ("xlsx", "ods", faq_workbook),
                                                     ("pptx", "ppt", deck), ("pptx", "odp", deck),
                                                     ("docx", "rtf", policy_docx), ("docx", "odt", policy_docx)])
def test_other_legacy_formats_are_read_as_their_modern_twins(source: str, ext: str, make) -> None:
    data = soffice_convert(make(), source, ext)
    doc = parse_file(f"文件.{ext}", data)
    assert doc.doc_type == ext and doc.metadata["converted_to"] == source
    if source == "xlsx":
        assert [block.meta["question"] for block in doc.blocks] == ["年假有几天？", "病假怎么请？"]
    elif source == "pptx":
        assert _kinds(doc) == [("heading", "季度经营总结"), ("text", "第三季度收入同比增长百分之二十，新增客户一百二十家。")]
    else:
        assert _kinds(doc) == POLICY


def test_wps_spreadsheet_and_presentation_names_read_the_97_formats() -> None:
    sheet = parse_file("报销问答.et", soffice_convert(faq_workbook(), "xlsx", "xls"))
    slides = parse_file("总结.dps", soffice_convert(deck(), "pptx", "ppt"))
    assert (sheet.doc_type, len(sheet.blocks), sheet.blocks[0].kind) == ("et", 2, "faq")
    assert (slides.doc_type, slides.blocks[0].text) == ("dps", "季度经营总结")


def _code(name: str, data: bytes) -> str:
    with pytest.raises(ParseError) as caught:
        parse_file(name, data)
    return caught.value.code


def test_bytes_that_are_not_the_claimed_format_are_type_mismatch(legacy_doc: bytes) -> None:
    assert _code("a.doc", "第一条 这是纯文本。".encode()) == "type_mismatch"
    assert _code("a.wps", b"%PDF-1.4\n" + b"0" * 100) == "type_mismatch"
    assert _code("a.xls", legacy_doc) == "type_mismatch"  # a Word file named .xls: the compound file says so
    assert _code("a.dps", legacy_doc) == "type_mismatch"
    assert _code("a.rtf", b"plain text, no RTF header") == "type_mismatch"
    assert _code("a.odt", policy_docx()) == "type_mismatch"  # a ZIP without content.xml


def test_opendocument_of_another_kind_is_type_mismatch() -> None:
    spreadsheet = soffice_convert(faq_workbook(), "xlsx", "ods")
    assert _code("a.odt", spreadsheet) == "type_mismatch"


def test_a_file_libreoffice_cannot_open_is_conversion_failed() -> None:
    damaged = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(range(256)) * 8  # the magic, then nothing readable
    assert _code("损坏.doc", damaged) == "conversion_failed"
    # Text in an RTF wrapper that breaks off is still read by LibreOffice (as it reads such files); a damaged
    # OpenDocument ZIP is not.
    assert _code("损坏.odp", b"PK\x03\x04" + b"\x00" * 200) in {"corrupt_file", "conversion_failed"}


def test_without_libreoffice_the_formats_are_refused_with_converter_missing(monkeypatch, legacy_doc: bytes) -> None:
    monkeypatch.setenv("ZHIKU_SOFFICE", "/nonexistent/soffice")
    assert _code("a.doc", legacy_doc) == "converter_missing"
    # Everything else still works.
    assert parse_file("a.docx", policy_docx()).doc_type == "docx"


def test_a_conversion_over_its_time_is_killed_with_its_whole_process_group(monkeypatch, tmp_path: Path) -> None:
    """A stand-in ``soffice`` that starts a helper and hangs: both are gone when the conversion's time is up."""
    pids = tmp_path / "pids"
    fake = tmp_path / "soffice"
    fake.write_text(f"#!/bin/sh\nsleep 300 &\necho $$ $! > {pids}\nsleep 300\n")
    fake.chmod(0o755)
    monkeypatch.setenv("ZHIKU_SOFFICE", str(fake))
    options = ParseOptions(wall_deadline=time.monotonic() + 6)
    with pytest.raises(ResourceLimit) as caught:
        parse_nested("slow.doc", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600, options)
    assert caught.value.budget == "time"
    for pid in map(int, pids.read_text().split()):
        assert _ends(lambda pid=pid: not _running(pid)), f"process {pid} outlived the conversion"


def _ends(condition) -> bool:
    """Whether ``condition()`` holds within a few seconds (a killed process takes a moment to be gone)."""
    for _ in range(100):
        if condition():
            return True
        time.sleep(0.1)
    return False


def _running(pid: int) -> bool:
    """Alive and not a zombie (a killed process whose new parent has not reaped it yet)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _offices() -> set[int]:
    found = set()
    for path in glob.glob("/proc/[0-9]*/comm"):
        try:
            with open(path) as handle:
                if handle.read().strip() == "soffice.bin":
                    found.add(int(path.split("/")[2]))
        except OSError:
            continue
    return {pid for pid in found if _running(pid)}


def test_a_cancelled_parse_leaves_no_libreoffice_behind(tmp_path: Path, legacy_doc: bytes) -> None:
    from knowledge.parsers.worker import Limits, ParseCancelled, parse_bounded

    path = tmp_path / "a.doc"
    path.write_bytes(legacy_doc)
    before = _offices()
    started: set[int] = set()

    def cancelled() -> bool:  # stop the parse as soon as its LibreOffice runs
        started.update(_offices() - before)
        return bool(started)

    with pytest.raises(ParseCancelled):
        parse_bounded("a.doc", str(path), Limits(), cancelled=cancelled, poll_seconds=0.02)
    assert started
    assert _ends(lambda: not started & _offices())  # the kernel kills it as its parent dies (setpriv --pdeathsig)


@pytest.mark.django_db
def test_doc_and_wps_uploaded_through_the_api_become_searchable_chunks(kb, alice, client_for, legacy_doc: bytes,
                                                                       django_capture_on_commit_callbacks) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = client_for(alice)
    files = [SimpleUploadedFile("差旅办法.doc", legacy_doc, content_type="application/msword"),
             SimpleUploadedFile("住宿标准.wps", legacy_doc, content_type="application/octet-stream")]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/api/kbs/{kb.pk}/documents/", {"files": files}, format="multipart")
    assert response.status_code == 202, response.content
    for row in response.json()["documents"]:
        document = client.get(f"/api/kbs/{kb.pk}/documents/{row['id']}/").json()
        assert document["status"] == DocumentStatus.READY, document["error"]
        assert document["doc_type"] in {"doc", "wps"} and document["metadata"]["converted_to"] == "docx"
    found = client.post("/api/search/", {"query": "坐飞机出差可以坐什么舱位", "kb_ids": [kb.pk]}, format="json").json()
    top = found["results"][0]
    assert "经济舱" in top["content"] and top["section_path"] == ["差旅费管理办法"]


@pytest.mark.django_db
def test_a_damaged_doc_fails_with_its_code_through_ingestion(kb, ingest) -> None:
    (document,) = ingest(kb, {"坏文件.doc": b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(range(256)) * 8})
    assert document.status == DocumentStatus.FAILED
    assert document.error_code == "conversion_failed"
    assert not document.chunks.exists()


def test_soffice_of_the_environment_is_used_only_when_executable(monkeypatch, tmp_path: Path) -> None:
    from knowledge.parsers.legacy import soffice_path

    monkeypatch.setenv("ZHIKU_SOFFICE", str(tmp_path / "missing"))
    assert soffice_path() is None
    monkeypatch.delenv("ZHIKU_SOFFICE")
    assert soffice_path() == shutil.which("soffice")
    assert os.access(soffice_path(), os.X_OK)
