"""Scanned PDF pages: rendered with pypdfium2, read by OCR into lines the layout stage reads like any other."""
from __future__ import annotations

import time

from knowledge.parsers.budget import cut_short, out_of_time
from knowledge.parsers.layout import Line, TableItem
from knowledge.parsers.types import ParseError, ParseOptions


def recognise_scans(data: bytes, scans: list[int], pages: dict, ocr_meta: dict[int, dict],
                     options: ParseOptions, last: int) -> tuple[list[int], int]:
    """OCR the scanned pages up to page ``last`` into ``pages`` (lines in points) and ``ocr_meta``.

    Returns the blank pages and the last page read: ``last``, or the page before the one a preview
    had no time left for (a page takes about as long as the one before it). A scanned page that is
    not blank but yields no text fails the document (``ocr_failed``).
    """
    import pypdfium2
    from PIL import ImageStat

    from knowledge.parsers import ocr

    scans = [number for number in scans if number <= last]
    blank: list[int] = []
    document = pypdfium2.PdfDocument(data, password="")
    took = 0.0
    try:
        for done, number in enumerate(scans):
            if options.preview and out_of_time(options, took):
                cut_short(options, "time", 0, pages_read=number - 1)
                return blank, number - 1
            if options.on_page:
                options.on_page(done, len(scans))
            started = time.monotonic()
            page = document[number - 1]
            width, height = page.get_size()
            scale = ocr.RENDER_DPI / 72
            if width * height * scale * scale > ocr.MAX_PIXELS:
                scale = (ocr.MAX_PIXELS / max(width * height, 1.0)) ** 0.5
            image = page.render(scale=scale).to_pil().convert("RGB")
            options.usage.ocr_pages += 1
            recognised, found_tables = ocr.read(image)
            took = time.monotonic() - started
            if not recognised and not found_tables:
                if max(ImageStat.Stat(image.convert("L")).stddev) < 4:
                    blank.append(number)
                    continue
                raise ParseError("ocr_failed", f"page {number} is a scanned image, but no text could be recognised on it")
            to_points = 1 / scale
            lines = [ocr_line(item, number, height, to_points) for item in recognised]
            tables = [TableItem(rows=table.rows, top=table.top * to_points, bottom=table.bottom * to_points,
                                x0=table.x0 * to_points, x1=table.x1 * to_points, page=number,
                                row_pages=[number] * len(table.rows), columns=[x * to_points for x in table.columns])
                      for table in found_tables]
            pages[number] = (lines, tables)
            chars = sum(len(item.text) for item in recognised) or 1
            confidence = sum(item.confidence * len(item.text) for item in recognised) / chars if recognised else 1.0
            ocr_meta[number] = {"ocr": True, "ocr_confidence": round(confidence, 4)}
        if options.on_page:
            options.on_page(len(scans), len(scans))
    finally:
        document.close()
    return blank, last


def ocr_line(item, page: int, page_height: float, to_points: float) -> Line:
    """An OCR line in the page's coordinates; its size is the box height less the detector's padding."""
    return Line(text=item.text, x0=item.x0 * to_points, top=item.top * to_points, x1=item.x1 * to_points,
                bottom=item.bottom * to_points, size=(item.bottom - item.top) * to_points * 0.8, page=page,
                page_height=page_height, confidence=item.confidence)
