"""Optical character recognition of page images with RapidOCR (PP-OCRv4 models on onnxruntime, shipped in the wheel).

Why RapidOCR: it runs offline from one PyPI package whose wheel carries its Chinese detection and
recognition models (no model hub, no system package), and on this project's generated pages it reads
Chinese far better than Debian's Tesseract ``chi_sim`` (docs/ingestion.md has the figures).
The engine is loaded once per process, on first use, and is not thread-safe: calls are serialised.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

from knowledge.parsers.ocr_tables import borderless, visual_rows

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


@dataclass(frozen=True)
class OcrTable:
    """A table found in an image (ruled, or borderless from its boxes' alignment): its box (pixels) and its cells'
    recognised text, row by row; a borderless one also has its columns' left edges (to match a continuation)."""

    x0: float
    top: float
    x1: float
    bottom: float
    rows: list[list[str]]
    columns: list[float] = field(default_factory=list)


def recognise(image) -> list[OcrLine]:
    """The text lines in a Pillow image, in reading order (top to bottom, then left to right)."""
    return merge_segments(recognise_boxes(image))


def read(image) -> tuple[list[OcrLine], list[OcrTable]]:
    """Lines outside tables, and the tables with the text of each cell: ruled ones from their strokes
    (``find_tables``), then borderless ones from the alignment of the boxes left (``ocr_tables.borderless``).

    Raises ``ParseError("ocr_failed")`` when the engine cannot run (e.g. OpenCV without the system's libGL).
    """
    from knowledge.parsers.types import ParseError

    try:
        boxes = recognise_boxes(image)
        tables = find_tables(image, boxes) if boxes else []
    except Exception as exc:
        if "bad_alloc" in str(exc):  # onnxruntime out of memory: over the parse's memory budget (knowledge.parsers.worker)
            raise MemoryError(str(exc)) from exc
        if isinstance(exc, (ImportError, OSError, RuntimeError)):  # onnxruntime and OpenCV report failures so
            raise ParseError("ocr_failed", f"OCR could not run here ({type(exc).__name__}: {exc})") from exc
        raise
    inside = {id(box) for table, members in tables for box in members}
    found, rest = borderless([box for box in boxes if id(box) not in inside])
    tables.extend((OcrTable(t.x0, t.top, t.x1, t.bottom, t.rows, t.columns), []) for t in found)
    return merge_segments(rest), sorted((table for table, _ in tables), key=lambda t: t.top)


def recognise_boxes(image) -> list[OcrLine]:
    """The engine's text boxes, unmerged (a table's cells are separate boxes)."""
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
    return lines


def find_tables(image, boxes: list[OcrLine]) -> list[tuple[OcrTable, list[OcrLine]]]:
    """Ruled tables: long horizontal and vertical strokes (morphological opening) that form a grid; each text
    box whose centre falls in a cell goes to that cell. Returns the tables and the boxes they took."""
    import cv2
    import numpy as np

    gray = np.asarray(image.convert("L"))
    height, width = gray.shape
    ink = cv2.adaptiveThreshold(255 - gray, 255, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_BINARY, 15, -2)
    horizontal = cv2.morphologyEx(ink, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, (max(20, width // 30), 1)))
    vertical = cv2.morphologyEx(ink, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, (1, max(10, height // 60))))
    grid = cv2.dilate(np.bitwise_or(horizontal, vertical), np.ones((3, 3), np.uint8))
    count, _, stats, _ = cv2.connectedComponentsWithStats(grid)
    out = []
    for index in range(1, count):
        x, y, w, h, _ = stats[index]
        if w < 0.2 * width or h < 0.02 * height:
            continue
        rows = _separators(horizontal[y:y + h, x:x + w].sum(axis=1) / 255, 0.6 * w, y)
        columns = _separators(vertical[y:y + h, x:x + w].sum(axis=0) / 255, 0.6 * h, x)
        if len(rows) < 3 or len(columns) < 3:  # at least two rows and two columns of cells
            continue
        cells = [["" for _ in columns[:-1]] for _ in rows[:-1]]
        taken = []
        for box in sorted(boxes, key=lambda b: (b.top, b.x0)):
            cx, cy = (box.x0 + box.x1) / 2, (box.top + box.bottom) / 2
            if not (columns[0] < cx < columns[-1] and rows[0] < cy < rows[-1]):
                continue
            r = max(i for i, edge in enumerate(rows[:-1]) if edge <= cy)
            c = max(i for i, edge in enumerate(columns[:-1]) if edge <= cx)
            cells[r][c] = (cells[r][c] + box.text) if _joins_tight(cells[r][c], box.text) else f"{cells[r][c]} {box.text}"
            taken.append(box)
        out.append((OcrTable(float(columns[0]), float(rows[0]), float(columns[-1]), float(rows[-1]),
                             [[cell.strip() for cell in row] for row in cells]), taken))
    return out


def _separators(profile, floor: float, offset: int) -> list[float]:
    """Centres of the runs of the profile at or above ``floor`` (the ruling lines), in image coordinates."""
    edges: list[float] = []
    start = None
    for position, value in enumerate(list(profile) + [0]):
        if value >= floor and start is None:
            start = position
        elif value < floor and start is not None:
            edges.append(offset + (start + position - 1) / 2)
            start = None
    return edges


def _joins_tight(before: str, after: str) -> bool:
    """Text of one cell wrapped over lines joins without a space between CJK characters."""
    return not before or not (before[-1].isascii() and after[:1].isascii())


def merge_segments(lines: list[OcrLine]) -> list[OcrLine]:
    """Join boxes that sit on one text line (the detector sometimes cuts a line at a wide gap)."""
    merged = []
    for row in visual_rows(lines):
        text = row[0].text
        for before, item in zip(row, row[1:], strict=False):
            gap = item.x0 - before.x1
            height = before.bottom - before.top
            text += (" " if gap > 0.6 * height or (before.text[-1:].isascii() and item.text[:1].isascii()) else "") + item.text
        chars = sum(len(item.text) for item in row)
        confidence = sum(item.confidence * len(item.text) for item in row) / max(chars, 1)
        merged.append(OcrLine(text, min(i.x0 for i in row), min(i.top for i in row), max(i.x1 for i in row),
                              max(i.bottom for i in row), confidence))
    return merged
