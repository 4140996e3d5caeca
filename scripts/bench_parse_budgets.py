"""What parsing in a bounded child costs, and what the hostile files cost now (docs/production.md, "Budgets for uploaded files").

    .venv/bin/python scripts/bench_parse_budgets.py [--runs 30]

Prints: the forkserver's first start; the median time of a small Markdown parse in this process and in
a bounded child (the difference is the per-parse overhead); for the generated hostile files (a PDF
whose 1 MiB stream inflates to 1 GiB, one whose 200 KiB stream inflates to 200 MiB, an XLSX declaring
A1:XFD1048576 with a cell in its last one, a 400-page PDF under a 2 s budget), how long until the parse
is refused or done, how far this process's peak resident memory rose meanwhile, and how far the
proportional set size (PSS) of the processes under it (the forkserver and the parsing child) rose at
its peak, sampled every 10 ms.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from knowledge.parsers import ParseError, parse_file  # noqa: E402 - after the sys.path line (repo root)
from knowledge.parsers.worker import Limits, parse_bounded, warm_up  # noqa: E402 - after the sys.path line (repo root)
from tests.docgen import dimension_bomb_xlsx, flate_bomb_pdf, many_pages_pdf  # noqa: E402 - after the sys.path line (repo root)
from tests.helpers import peak_growth  # noqa: E402 - after the sys.path line (repo root)

SMALL = "# 售后手册\n\n## 退货\n\n商品签收后七天内可以申请无理由退货，运费由买家承担。\n".encode()


def _children_pss() -> int:
    total = 0
    for child in psutil.Process().children(recursive=True):
        try:
            total += child.memory_full_info().pss
        except psutil.Error:  # ended meanwhile
            continue
    return total


def _measured(run) -> tuple[str, float, float, float]:
    """(outcome, seconds, peak resident growth of this process in MiB, peak PSS growth of the processes under it)."""
    before = _children_pss()
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _children_pss())
            done.wait(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    with peak_growth() as grown:
        try:
            outcome = run()
        except ParseError as exc:
            outcome = f"{exc.code}: {exc.message[:70]}"
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    return outcome, seconds, grown["mib"], (peak[0] - before) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="zhiku-bench-"))

    def write(name: str, data: bytes) -> str:
        (folder / name).write_bytes(data)
        return str(folder / name)

    small = write("small.md", SMALL)
    started = time.perf_counter()
    warm_up()
    parse_bounded("small.md", small, Limits())  # the first child waits for the forkserver's imports
    print(f"first parse of the process (the forkserver starts and imports the parsers): {time.perf_counter() - started:.2f} s")
    inline, bounded = [], []
    for _ in range(args.runs):
        t = time.perf_counter()
        parse_file("small.md", SMALL)
        inline.append(time.perf_counter() - t)
        t = time.perf_counter()
        parse_bounded("small.md", small, Limits())
        bounded.append(time.perf_counter() - t)
    print(f"small Markdown, median of {args.runs}: in this process {statistics.median(inline) * 1000:.1f} ms, "
          f"in a bounded child {statistics.median(bounded) * 1000:.1f} ms "
          f"(overhead {(statistics.median(bounded) - statistics.median(inline)) * 1000:.1f} ms)")

    bomb = write("bomb.pdf", flate_bomb_pdf(1024))
    small_bomb = write("small-bomb.pdf", flate_bomb_pdf(200))
    sheet = write("faq.xlsx", dimension_bomb_xlsx([("营业时间？", "九点到六点。")] * 3))
    long_pdf = write("long.pdf", many_pages_pdf(400))
    cases = [
        ("PDF flate bomb (1 MiB → 1 GiB), default budgets", lambda: parse_bounded("bomb.pdf", bomb, Limits()).document.title),
        ("same, inflate cap and ratio off, memory budget 400 MiB",
         lambda: parse_bounded("bomb.pdf", bomb, Limits(max_inflated_mb=4096, max_zip_ratio=10**6, memory_mb=400)).document.title),
        ("PDF flate bomb under the cap (200 KiB → 200 MiB)",
         lambda: parse_bounded("small-bomb.pdf", small_bomb, Limits(wall_seconds=60)).document.title),
        ("XLSX declaring A1:XFD1048576, three rows and a cell in XFD1048576",
         lambda: f"ready, {len(parse_bounded('faq.xlsx', sheet, Limits()).document.blocks)} FAQ blocks"),
        ("400-page PDF, wall budget 2 s", lambda: parse_bounded("long.pdf", long_pdf, Limits(wall_seconds=2)).document.title),
        ("400-page PDF, processor budget 1 s", lambda: parse_bounded("long.pdf", long_pdf, Limits(cpu_seconds=1)).document.title),
        ("400-page PDF preview, 3 s",
         lambda: str(parse_bounded("long.pdf", long_pdf, Limits(wall_seconds=3, max_pages=1000, preview=True)).cut_short)),
    ]
    for name, run in cases:
        outcome, seconds, grown, child = _measured(run)
        print(f"{name}: {seconds:.2f} s, this process's peak RSS +{grown:.0f} MiB, the processes under it PSS "
              f"+{child:.0f} MiB at the peak -> {outcome}")


if __name__ == "__main__":
    main()
