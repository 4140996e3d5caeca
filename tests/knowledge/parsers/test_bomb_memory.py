"""Hostile files sent to a real daphne, all at once, through the chunking preview and the upload: the server's whole
process group stays small (docs/production.md, "Budgets for uploaded files").

The files are tests/docgen.py's: a PDF whose 1 MiB content stream inflates to 1 GiB of zeros (over the inflated
budget), one whose 200 KiB stream inflates to 200 MiB (under it: only its ratio gives it away) and an XLSX declaring
the whole 16,384 × 1,048,576 grid with a cell in its last one. The parse of each runs in a child of the server's
parse forkserver (knowledge/parsers/worker.py), so the web process alone would hide it: the memory measured is the
proportional set size (PSS) summed over the daphne process and every process under it (the forkserver, the parsing
children, multiprocessing's resource tracker), sampled every few milliseconds while the requests run. PSS counts a
page shared by n processes 1/n in each, so the forked children's shared pages are counted once, as the machine
pays for them; the sum of RSS, which counts them in every child, is printed beside it.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import psutil
import pytest
import requests

from knowledge.models import Chunk, Document, DocumentStatus
from tests.browser import daphne
from tests.docgen import dimension_bomb_xlsx, flate_bomb_pdf
from tests.helpers import api_token, wait_for

pytestmark = pytest.mark.django_db(transaction=True)
MIB = 1024 * 1024
GROWTH_LIMIT_MIB = 400  # issue 45: the bombs grow the server's memory by less than this


@pytest.fixture(scope="module")
def server(tmp_path_factory, django_db_blocker):
    """daphne as `make run` serves (ingestion inline here), its log, and its process."""
    log = tmp_path_factory.mktemp("bombs") / "daphne.log"
    # The wall budget of an ingestion's parse, lowered from 1800 s only so that a regression fails in a minute.
    with django_db_blocker.unblock(), daphne(log, ZHIKU_PARSE_SECONDS="60") as url:
        yield url, log, _listening(url)


def _listening(url: str) -> psutil.Process:
    port = urlsplit(url).port
    for proc in psutil.process_iter(["pid"]):
        try:
            if any(c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN for c in proc.net_connections("tcp")):
                return proc
        except (psutil.AccessDenied, psutil.NoSuchProcess):
            continue
    raise AssertionError("the server's process was not found")


def group_memory(server: psutil.Process) -> tuple[int, int, int]:
    """(PSS, RSS, processes) summed over ``server`` and all its descendants; one that ends meanwhile counts 0."""
    pss = rss = count = 0
    for proc in [server, *server.children(recursive=True)]:
        try:
            memory = proc.memory_full_info()
        except psutil.Error:
            continue
        pss, rss, count = pss + memory.pss, rss + memory.rss, count + 1
    return pss, rss, count


def settled(server: psutil.Process, *, ceiling_s: float = 90) -> int:
    """The group's PSS once it stops moving (the warm-up thread loads the models after the server listens)."""
    deadline = time.monotonic() + ceiling_s
    last = group_memory(server)[0]
    while time.monotonic() < deadline:
        time.sleep(1)
        now = group_memory(server)[0]
        if abs(now - last) < 2 * MIB:
            return now
        last = now
    return last


class Peak:
    """The highest group PSS (and RSS, and process count) seen while the block runs, sampled in a thread."""

    def __init__(self, server: psutil.Process) -> None:
        self.server, self.pss, self.rss, self.processes = server, 0, 0, 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.is_set():
            pss, rss, count = group_memory(self.server)
            self.pss, self.rss, self.processes = max(self.pss, pss), max(self.rss, rss), max(self.processes, count)
            self._done.wait(0.01)

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()


def test_bombs_sent_at_once_to_preview_and_upload_grow_the_server_by_less_than_400_mb(server, alice, kb):
    url, log, process = server
    headers = {"Authorization": f"Token {api_token(alice)}", "Accept-Language": "zh-hans"}
    bombs = {
        "over-budget.pdf": flate_bomb_pdf(1024),   # 1 MiB of file
        "under-budget.pdf": flate_bomb_pdf(200),   # 200 KiB
        "grid.xlsx": dimension_bomb_xlsx([("营业时间？", "每天九点到十八点。")]),  # 5 KiB
    }
    api = f"{url}/api/kbs/{kb.pk}/documents/"
    warm = requests.post(api + "preview/", headers=headers, files={"file": ("warm.md", "# 预热\n\n第一次请求的导入。".encode())})
    assert warm.status_code == 200, warm.text  # the first request's imports and the first parsing child
    baseline = settled(process)

    def preview(name: str) -> requests.Response:
        return requests.post(api + "preview/", headers=headers, files={"file": (name, bombs[name])}, timeout=120)

    def upload() -> requests.Response:
        return requests.post(api, headers=headers, files=[("files", (n, data)) for n, data in bombs.items()], timeout=300)

    started = time.monotonic()
    with Peak(process) as peak, ThreadPoolExecutor(len(bombs) + 1) as pool:
        previews = {name: pool.submit(preview, name) for name in bombs}
        uploaded = pool.submit(upload)
        answers = {name: future.result() for name, future in previews.items()}
        upload_answer = uploaded.result()
        documents = wait_for(lambda: _finished(kb), 120, "the uploaded bombs finished ingesting", [log])
    took = time.monotonic() - started
    grown = (peak.pss - baseline) / MIB
    print(f"\nbombs at once (3 previews, 1 upload of 3 files): group PSS {baseline / MIB:.0f} MiB settled, peak "
          f"+{grown:.0f} MiB (RSS summed: peak {peak.rss / MIB:.0f} MiB; {peak.processes} processes at most), {took:.1f} s")
    assert grown < GROWTH_LIMIT_MIB, f"the server's process group grew {grown:.0f} MiB"

    over, under, grid = (answers[name] for name in bombs)
    assert (over.status_code, over.json()["error"]["code"]) == (400, "resource_limit"), over.text
    assert "256 MB" in over.json()["error"]["message"], over.text
    assert (under.status_code, under.json()["error"]["code"]) == (400, "archive_bomb"), under.text
    assert grid.status_code == 200, grid.text  # the grid is not built: the sheet costs what its cells cost
    assert [chunk["content"] for chunk in grid.json()["chunks"]] == ["问：营业时间？\n答：每天九点到十八点。"]
    assert upload_answer.status_code == 202, upload_answer.text
    assert {name: (d.status, d.error_code) for name, d in documents.items()} == {
        "over-budget.pdf": (DocumentStatus.FAILED, "resource_limit"),
        "under-budget.pdf": (DocumentStatus.FAILED, "archive_bomb"),
        "grid.xlsx": (DocumentStatus.READY, ""),
    }
    assert Chunk.objects.filter(document__kb=kb).count() == 1


def _finished(kb) -> dict[str, Document] | None:
    documents = {d.source_name: d for d in Document.objects.filter(kb=kb)}
    done = len(documents) == 3 and all(d.status in (DocumentStatus.READY, DocumentStatus.FAILED) for d in documents.values())
    return documents if done else None
