"""Measure legacy-format conversion (LibreOffice) and OCR of pictures inside DOCX/PPTX, for docs/ingestion.md.

    .venv/bin/python scripts/bench_legacy_pictures.py [--json] [--repeat 3]

``scripts/bench_documents.py`` runs this too and adds its figures to its report. Files are generated here:

- legacy: a policy DOCX, an FAQ XLSX and a deck PPTX written by python-docx/openpyxl/python-pptx, converted to
  .doc .wps .rtf .odt / .xls .et .ods / .ppt .dps .odp by LibreOffice; reported: seconds per file for the
  platform's conversion alone (``conversion_seconds``) and for conversion + parse, the median of ``--repeat``
  runs, and one parse of the .doc through the bounded parse child (``parse_bounded``) as ingestion does;
- pictures: screenshots of Chinese text drawn with the machine's WQY font at 18–30 px, pasted into a DOCX (between
  paragraphs) and a PPTX (one per slide); reported: OCR character accuracy (1 − edit distance ÷ length,
  whitespace ignored, NFKC) of each picture's text against the lines drawn, and seconds per picture.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

PICTURES = [
    (18, ["报销单填写说明", "请在系统中选择费用类型，并上传发票照片。"]),
    (22, ["审批状态：部门经理已同意", "下一步：财务部复核，预计两个工作日。"]),
    (26, ["用户名：请输入员工工号", "密码：初始密码为身份证后六位"]),
    (30, ["注意：连续五次输错密码，账号将被锁定三十分钟。"]),
    (20, ["差旅标准：一线城市住宿每晚不超过六百元", "二线城市每晚不超过四百五十元"]),
    (24, ["会议室预订：提前一天在行政系统中登记", "取消预订请在开始前两小时操作。"]),
]


def _sources() -> dict[str, tuple[str, bytes]]:
    from tests.knowledge.parsers.test_legacy import deck, faq_workbook, policy_docx

    return {"docx": ("docx", policy_docx()), "xlsx": ("xlsx", faq_workbook()), "pptx": ("pptx", deck())}


def legacy_figures(repeat: int = 3) -> dict:
    """Seconds per file for each legacy format: conversion alone and conversion + parse (medians)."""
    from knowledge.parsers import parse_file
    from knowledge.parsers.legacy import FORMATS, soffice_path
    from tests.knowledge.parsers.test_legacy import soffice_convert

    if soffice_path() is None:
        return {"skipped": "LibreOffice is not installed (scripts/ensure_libreoffice.sh)"}
    sources = _sources()
    out: dict = {}
    for ext, (_, target) in FORMATS.items():
        source_ext, source = sources[target]
        made = soffice_convert(source, source_ext, "xls" if ext == "et" else "ppt" if ext == "dps"
                               else "doc" if ext == "wps" else ext)
        conversions, totals = [], []
        for _ in range(repeat):
            started = time.perf_counter()
            doc = parse_file(f"bench.{ext}", made)
            totals.append(time.perf_counter() - started)
            conversions.append(doc.metadata["conversion_seconds"])
        out[ext] = {"bytes": len(made), "conversion_s": round(statistics.median(conversions), 2),
                    "conversion_and_parse_s": round(statistics.median(totals), 2), "blocks": len(doc.blocks)}
    out["doc_via_parse_child_s"] = round(_bounded_seconds(soffice_convert(sources["docx"][1], "docx", "doc")), 2)
    return out


def _bounded_seconds(data: bytes) -> float:
    from knowledge.parsers.worker import Limits, parse_bounded, warm_up

    warm_up()
    with tempfile.NamedTemporaryFile(suffix=".doc") as handle:
        handle.write(data)
        handle.flush()
        started = time.perf_counter()
        parse_bounded("bench.doc", handle.name, Limits())
        return time.perf_counter() - started


def picture_figures() -> dict:
    """OCR character accuracy and seconds per picture for screenshots inside a DOCX and a PPTX."""
    from bench_documents import char_accuracy

    from knowledge.parsers import parse_file
    from tests.docgen import text_image

    images = [text_image(lines, size=size, width=max(700, size * 34)) for size, lines in PICTURES]
    out: dict = {}
    for kind, data in (("docx", _docx_with(images)), ("pptx", _pptx_with(images))):
        started = time.perf_counter()
        doc = parse_file(f"bench.{kind}", data)
        seconds = time.perf_counter() - started
        found = [b.text for b in doc.blocks if b.meta.get("picture")]
        scores = [char_accuracy(found[i] if i < len(found) else "", "\n".join(lines))
                  for i, (_, lines) in enumerate(PICTURES)]
        confidences = [b.meta["ocr_confidence"] for b in doc.blocks if b.meta.get("picture")]
        out[kind] = {"pictures": len(PICTURES), "read": doc.metadata.get("pictures_read", 0),
                     "char_accuracy": round(statistics.fmean(scores), 4), "min_char_accuracy": round(min(scores), 4),
                     "mean_confidence": round(statistics.fmean(confidences), 4) if confidences else None,
                     "s_per_picture": round(seconds / len(PICTURES), 2)}
    return out


def _docx_with(images: list[bytes]) -> bytes:
    import docx
    from docx.shared import Inches

    document = docx.Document()
    for number, image in enumerate(images, start=1):
        document.add_paragraph(f"第 {number} 步的界面如下图所示。")
        document.add_picture(io.BytesIO(image), width=Inches(5.5))
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _pptx_with(images: list[bytes]) -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    presentation = Presentation()
    for number, image in enumerate(images, start=1):
        slide = presentation.slides.add_slide(presentation.slide_layouts[5])
        slide.shapes.title.text = f"第 {number} 步"
        slide.shapes.add_picture(io.BytesIO(image), Inches(0.8), Inches(2), width=Inches(8.4))
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def print_report(report: dict) -> None:
    legacy = report["legacy"]
    if "skipped" in legacy:
        print("legacy formats:", legacy["skipped"])
    else:
        print("legacy formats (seconds per file, median): conversion / conversion + parse")
        for ext, figures in legacy.items():
            if isinstance(figures, dict):
                print(f"  .{ext:<4} {figures['conversion_s']:>5} / {figures['conversion_and_parse_s']:>5}"
                      f"  ({figures['bytes']} bytes, {figures['blocks']} blocks)")
        print(f"  .doc through the bounded parse child: {legacy['doc_via_parse_child_s']} s")
    for kind, figures in report["pictures"].items():
        print(f"pictures in {kind.upper()}: {figures['read']}/{figures['pictures']} read, OCR chars"
              f" {figures['char_accuracy']:.2%} (lowest {figures['min_char_accuracy']:.2%}), confidence"
              f" {figures['mean_confidence']}, {figures['s_per_picture']} s/picture")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import django

    django.setup()
    from knowledge.parsers import ocr

    ocr._get_engine()
    report = {"legacy": legacy_figures(args.repeat), "pictures": picture_figures()}
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        print_report(report)


if __name__ == "__main__":
    main()
