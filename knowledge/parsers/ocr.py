"""Optical character recognition of page images with RapidOCR (PP-OCRv4 models on onnxruntime, shipped in the wheel).

Why RapidOCR: it runs offline from one PyPI package whose wheel carries its Chinese detection and
recognition models (no model hub, no system package), and on this project's generated pages it reads
Chinese far better than Debian's Tesseract ``chi_sim`` (docs/ingestion.md has the figures).
The engine is loaded once per process, on first use, and is not thread-safe: calls are serialised.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

# Pixel cap for one image or rendered page (a decompression bomb guard; A4 at 300 DPI is 8.7 Mpx).
MAX_PIXELS = 40_000_000
# Pages are rendered at this resolution for OCR: body text of 10–12 pt is then 20–25 px high,
# which the recognition model (48 px input) reads reliably; higher costs time and gains nothing.
RENDER_DPI = 150

_engine = None
_lock = threading.Lock()


@dataclass(frozen=True)
class OcrLine:
    """One recognised line: text, box (pixels, top-left origin) and the engine's confidence (0..1)."""

    text: str
    x0: float
    top: float
    x1: float
    bottom: float
    confidence: float


def _get_engine():
    global _engine
    if _engine is None:
        from rapidocr_onnxruntime import RapidOCR

        # Text-line orientation (0/180°) classification: off, scans and screenshots are upright,
        # and it costs time on every line. Detection scales the image so its longest side is at most
        # 960–2000 px ("max"); the default ("min" 736) blows a 900×150 screenshot up to 4400×736,
        # which took 10 s instead of 0.6 s and misread a heading (三、联系方式 → 三、耳 联系方式).
        _engine = RapidOCR(use_cls=False, print_verbose=False, det_limit_type="max")
    return _engine


def recognise(image) -> list[OcrLine]:
    """The text lines in a Pillow image, in reading order (top to bottom, then left to right)."""
    import numpy as np

    rgb = image.convert("RGB")
    with _lock:
        result, _ = _get_engine()(np.asarray(rgb))
    lines = []
    for box, text, score in result or []:
        text = " ".join(str(text).split())
        if not text:
            continue
        xs = [point[0] for point in box]
        ys = [point[1] for point in box]
        lines.append(OcrLine(text, min(xs), min(ys), max(xs), max(ys), float(score)))
    return merge_segments(lines)


def merge_segments(lines: list[OcrLine]) -> list[OcrLine]:
    """Join boxes that sit on one text line (the detector sometimes cuts a line at a wide gap)."""
    lines = sorted(lines, key=lambda line: (line.top + line.bottom) / 2)
    rows: list[list[OcrLine]] = []
    for line in lines:
        middle = (line.top + line.bottom) / 2
        if rows:
            last = rows[-1]
            top = min(item.top for item in last)
            bottom = max(item.bottom for item in last)
            height = bottom - top
            if top + 0.25 * height <= middle <= bottom - 0.25 * height:
                last.append(line)
                continue
        rows.append([line])
    merged = []
    for row in rows:
        row.sort(key=lambda item: item.x0)
        text = row[0].text
        for before, item in zip(row, row[1:]):
            gap = item.x0 - before.x1
            height = before.bottom - before.top
            text += (" " if gap > 0.6 * height or (before.text[-1:].isascii() and item.text[:1].isascii()) else "") + item.text
        chars = sum(len(item.text) for item in row)
        confidence = sum(item.confidence * len(item.text) for item in row) / max(chars, 1)
        merged.append(OcrLine(text, min(i.x0 for i in row), min(i.top for i in row), max(i.x1 for i in row),
                              max(i.bottom for i in row), confidence))
    return merged
