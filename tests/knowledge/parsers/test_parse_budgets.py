"""Uploaded files are parsed in a child process inside budgets they cannot break (knowledge/parsers/worker.py).

The hostile files are made here, small: a PDF whose 1 MiB content stream inflates to 1 GiB, a sheet
declaring 16,384 columns by a million rows for three filled ones, a long PDF, scans. Each failure
must be ``resource_limit`` naming its budget, with no chunk stored, while this process (the one that
would be the web or worker process) stays as small as it was: its peak resident memory is read from
/proc/self/status, after resetting the peak through /proc/self/clear_refs.
"""
from __future__ import annotations

import io
import socket
import time
from urllib.parse import urlsplit

import psutil
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import translation
from PIL import Image

from knowledge.errors import document_failure_text as ingest_error_message
from knowledge.models import Chunk, DocumentStatus
from knowledge.parsers import parse_file
from knowledge.parsers.budget import budget_of
from knowledge.parsers.worker import Limits, parse_bounded
from tests.docgen import faq_xlsx, flate_bomb_pdf, many_pages_pdf, raw_pdf, scanned_pdf, text_image, text_page
from tests.helpers import peak_growth
from tests.knowledge.api.test_api import error_of, kb_url

pytestmark = pytest.mark.django_db
MIB = 1024 * 1024


def failed_on(document, budget: str) -> str:
    """Assert ``document`` failed with ``resource_limit`` on ``budget`` and stored no chunk; its Chinese message."""
    document.refresh_from_db()
    assert document.status == DocumentStatus.FAILED, document.status
    assert document.error_code == "resource_limit", (document.error_code, document.error_message)
    assert budget_of(document.error_message)[0] == budget, document.error_message
    assert not Chunk.objects.filter(document=document).exists()
    with translation.override("zh-hans"):
        return ingest_error_message(document.error_code, document.error_message)


def preview(client, kb, name: str, data: bytes):
    return client.post(kb_url(kb, "documents/preview/"), {"file": SimpleUploadedFile(name, data)}, format="multipart",
                       HTTP_ACCEPT_LANGUAGE="zh-hans")


def _scanned_page(lines: list[str]) -> bytes:
    """A JPEG shaped like an A4 page at 75 DPI with ``lines`` at its top, as a scanner makes a page."""
    page = Image.new("RGB", (620, 877), "white")
    page.paste(Image.open(io.BytesIO(text_image(lines, size=20, width=620))), (0, 0))
    buffer = io.BytesIO()
    page.save(buffer, format="JPEG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def bomb() -> bytes:
    data = flate_bomb_pdf(1024)
    assert len(data) < 2 * MIB  # 1 GiB of zeros inside
    return data


# --- ingestion: each budget ---------------------------------------------------------------------


def test_a_pdf_flate_bomb_fails_on_the_inflated_budget_and_this_process_stays_small(kb, ingest, bomb):
    with peak_growth() as grown:
        (document,) = ingest(kb, {"bomb.pdf": bomb})
    message = failed_on(document, "inflated")
    assert "256 MB" in message and "解压" in message, message
    assert grown["mib"] < 100, grown


def test_a_pdf_flate_bomb_under_the_inflated_budget_is_refused_for_its_ratio_before_it_is_kept(kb, ingest, settings):
    """200 MiB of zeros from a 200 KiB stream fit the 256 MiB budget; pdfminer used to hold them and read them for
    ten minutes at 650 MB. Inflated into nothing first, the stream is refused for inflating 1,000 times its size."""
    settings.ZHIKU_PARSE_SECONDS = 20  # (what stopped it before)
    started = time.monotonic()
    (document,) = ingest(kb, {"bomb.pdf": flate_bomb_pdf(200)})
    document.refresh_from_db()
    assert (document.status, document.error_code) == (DocumentStatus.FAILED, "archive_bomb"), document.error_message
    assert "inflates 1011x its size, over the limit of 100x" in document.error_message
    assert not Chunk.objects.filter(document=document).exists()
    assert time.monotonic() - started < 15


def test_a_parse_over_the_memory_budget_is_stopped_in_the_child(kb, ingest, bomb, settings):
    settings.ZHIKU_PARSE_MAX_INFLATED_MB = 4096  # let the bomb inflate: the memory budget has to stop it
    settings.ZHIKU_MAX_UNZIP_RATIO = 100_000  # (zeros inflate about 1,000 times)
    settings.ZHIKU_PARSE_MEMORY_MB = 400
    with peak_growth() as grown:
        (document,) = ingest(kb, {"bomb.pdf": bomb})
    message = failed_on(document, "memory")
    assert "400 MB" in message and "内存" in message, message
    assert grown["mib"] < 100, grown


def test_a_parse_over_the_time_budget_is_killed(kb, ingest, settings):
    settings.ZHIKU_PARSE_SECONDS = 2
    started = time.monotonic()
    with peak_growth() as grown:
        (document,) = ingest(kb, {"long.pdf": many_pages_pdf(400)})  # a minute or more of pdfplumber
    message = failed_on(document, "time")
    assert "2 秒" in message, message
    assert time.monotonic() - started < 30
    assert grown["mib"] < 100, grown


def test_a_parse_over_the_processor_time_budget_is_ended_by_the_kernel(kb, ingest, settings):
    settings.ZHIKU_PARSE_CPU_SECONDS = 1
    (document,) = ingest(kb, {"long.pdf": many_pages_pdf(400)})
    message = failed_on(document, "cpu")
    assert "1 秒" in message and "处理器" in message, message


def test_pages_over_the_page_budget_fail_before_any_is_read(kb, ingest, settings):
    settings.ZHIKU_PARSE_MAX_PAGES = 10
    (document,) = ingest(kb, {"long.pdf": many_pages_pdf(30)})
    assert "10 页" in failed_on(document, "pages")


def test_scanned_pages_over_the_ocr_budget_fail_before_any_is_recognised(kb, ingest, settings):
    settings.ZHIKU_PARSE_MAX_OCR_PAGES = 2
    images = [Image.open(io.BytesIO(text_image([f"第{i}页 扫描件"], size=26, width=600))) for i in range(3)]
    started = time.monotonic()
    (document,) = ingest(kb, {"scan.pdf": scanned_pdf(images)})
    assert "2 页" in failed_on(document, "ocr_pages")
    assert time.monotonic() - started < 20  # refused up front: three pages of OCR would take longer here


def test_text_over_the_character_budget_fails(kb, ingest, settings):
    settings.ZHIKU_PARSE_MAX_CHARS = 10_000
    (document,) = ingest(kb, {"long.txt": "\n\n".join(["退货政策说明。" * 50] * 40)})  # 14,000 characters
    assert "10000" in failed_on(document, "characters")


# --- the guards inside the parsers ---------------------------------------------------------------


def test_an_xlsx_declaring_a_huge_sheet_costs_what_its_cells_cost(kb, ingest, settings):
    rows = [("营业时间？", "每天九点到十八点。"), ("门店地址？", "北京市海淀区中关村大街一号。"),
            ("能开发票吗？", "可以，下单时填写抬头。")]
    # In this process: the sheet claims 16,384 columns by 3,000 rows, which openpyxl used to build (≈500 MB).
    with peak_growth() as grown:
        document = parse_file("faq.xlsx", faq_xlsx(rows, declared="A1:XFD3000"))
    assert [block.meta["question"] for block in document.blocks] == [q for q, _ in rows]
    assert document.metadata["columns"] == {"Sheet": ["问题", "答案"]}
    assert grown["mib"] < 50, grown
    # Ingested, the whole grid (16,384 × 1,048,576 cells declared) within a small memory budget.
    settings.ZHIKU_PARSE_MEMORY_MB = 512
    (ingested,) = ingest(kb, {"faq.xlsx": faq_xlsx(rows, declared="A1:XFD1048576")})
    assert ingested.status == DocumentStatus.READY, ingested.error_message
    assert ingested.chunks.count() == 3


def test_a_csv_faq_answer_may_be_longer_than_the_csv_modules_field_limit(tmp_path):
    answer = "退货需在签收后七天内申请，" * 16_000  # 208,000 characters, over csv's 131,072
    path = tmp_path / "faq.csv"
    path.write_text(f"问题,答案\n怎样退货？,{answer}\n", encoding="utf-8")
    parsed = parse_bounded("faq.csv", str(path), Limits()).document
    assert [block.meta["answer"] for block in parsed.blocks] == [answer]


# --- preview: the first pages, a short time, and gone with its client --------------------------------


def test_a_preview_reads_only_its_first_pages_and_says_so(client_for, alice, kb, settings):
    settings.ZHIKU_PREVIEW_MAX_PAGES = 3
    response = preview(client_for(alice), kb, "long.pdf", many_pages_pdf(12))
    assert response.status_code == 200, response.data
    cut = response.data["cut_short"]
    assert (cut["budget"], cut["limit"], cut["pages_read"]) == ("pages", 3, 3)
    assert cut["message"] == "预览只读取了前 3 页；上传后会读取整个文件。"
    assert response.data["chunks"] and all(chunk["page_end"] <= 3 for chunk in response.data["chunks"])


def test_a_preview_stops_before_scanned_pages_over_its_ocr_budget(client_for, alice, kb, settings):
    settings.ZHIKU_PREVIEW_MAX_OCR_PAGES = 0
    mixed = raw_pdf([text_page("Page one holds text.\n" * 5), b"", text_page("Page three holds text too.")],
                    images={2: _scanned_page(["第二页是扫描件，说明退货流程。"])})
    response = preview(client_for(alice), kb, "mixed.pdf", mixed)
    assert response.status_code == 200, response.data
    assert (response.data["cut_short"]["budget"], response.data["cut_short"]["pages_read"]) == ("ocr_pages", 1)
    assert all(chunk["page_end"] == 1 for chunk in response.data["chunks"])


def test_a_preview_out_of_time_shows_the_pages_read_by_then(client_for, alice, kb, settings):
    settings.ZHIKU_PREVIEW_SECONDS = 4  # stops starting pages at 3 s
    settings.ZHIKU_PREVIEW_MAX_PAGES = 1000
    started = time.monotonic()
    response = preview(client_for(alice), kb, "long.pdf", many_pages_pdf(400))
    assert time.monotonic() - started < 15
    assert response.status_code == 200, response.data
    cut = response.data["cut_short"]
    assert cut["budget"] == "time" and 1 <= cut["pages_read"] < 400, cut
    assert "秒" in cut["message"]


def test_a_preview_of_a_bomb_is_400_resource_limit(client_for, alice, kb, bomb):
    with peak_growth() as grown:
        response = preview(client_for(alice), kb, "bomb.pdf", bomb)
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "resource_limit" and "解压" in error["message"], error
    assert grown["mib"] < 100, grown


def _forkserver_of(server_pid: int) -> psutil.Process | None:
    for child in psutil.Process(server_pid).children():
        if any("forkserver" in part for part in child.cmdline()):
            return child
    return None


def _parse_children(server_pid: int) -> list[psutil.Process]:
    forkserver = _forkserver_of(server_pid)
    return forkserver.children() if forkserver is not None else []


@pytest.mark.django_db(transaction=True)
def test_a_preview_whose_client_disconnects_stops_its_parse(tmp_path, alice, kb):
    """A real daphne: the client sends a long PDF to preview and hangs up; the parsing child must go at once."""
    import urllib3

    from tests.browser import daphne
    from tests.helpers import api_token

    token = api_token(alice)
    body, content_type = urllib3.encode_multipart_formdata({"file": ("long.pdf", many_pages_pdf(2000), "application/pdf")})
    with daphne(tmp_path / "daphne.log", ZHIKU_PREVIEW_SECONDS="300", ZHIKU_PREVIEW_MAX_PAGES="100000") as url:
        parts = urlsplit(url)
        server = next(p for p in psutil.process_iter(["cmdline"])
                      if "daphne" in " ".join(p.info["cmdline"] or []) and str(parts.port) in (p.info["cmdline"] or []))
        head = (f"POST /api/kbs/{kb.pk}/documents/preview/ HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                f"Authorization: Token {token}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n")
        client = socket.create_connection((parts.hostname, parts.port), timeout=30)
        client.sendall(head.encode() + body)
        deadline = time.monotonic() + 30
        while not _parse_children(server.pid):
            assert time.monotonic() < deadline, "no parsing child appeared: " + (tmp_path / "daphne.log").read_text()
            time.sleep(0.05)
        (child,) = _parse_children(server.pid)
        time.sleep(0.5)
        assert child.is_running()  # parsing: 2,000 pages take minutes
        client.close()
        gone, _ = psutil.wait_procs([child], timeout=5)
        assert gone, "the parse went on after its client left"
