"""Images (PNG, JPEG): checked by content with Pillow, then read by OCR into paragraphs and numbered headings."""
from __future__ import annotations

import dataclasses
import io
import statistics

from knowledge.parsers.budget import ResourceLimit
from knowledge.parsers.headings import title_line
from knowledge.parsers.layout import BlockBuilder, Line, TableItem, body_size
from knowledge.parsers.types import ParsedDocument, ParseError, ParseOptions

_FORMATS = {"png": "PNG", "jpeg": "JPEG"}  # doc type -> Pillow format


def parse(data: bytes, *, stem: str, options: ParseOptions, doc_type: str = "png") -> ParsedDocument:
    from PIL import Image, ImageOps

    from knowledge.parsers import ocr

    try:
        with Image.open(io.BytesIO(data)) as probe:
            format_, size = probe.format, probe.size
            probe.verify()  # structure and checksums, without decoding the pixels
    except Image.DecompressionBombError as exc:
        raise ParseError("image_too_large", f"the image is too large to read ({exc})") from exc
    except Exception as exc:
        raise ParseError("corrupt_file", f"the image is damaged or not an image ({type(exc).__name__}: {exc})") from exc
    if format_ != _FORMATS[doc_type]:
        raise ParseError("type_mismatch", f"the file has a {doc_type.upper()} name but is a {format_} image")
    if size[0] * size[1] > ocr.MAX_PIXELS:
        raise ParseError("image_too_large", f"the image has {size[0]}×{size[1]} pixels, over the limit of"
                                            f" {ocr.MAX_PIXELS}; scale it down and upload it again")
    if options.usage.ocr_pages + 1 > options.max_ocr_pages:  # an e-mail's pictures share the file's OCR budget
        raise ResourceLimit("ocr_pages", options.max_ocr_pages, "one more picture to read by OCR")
    options.usage.ocr_pages += 1
    with Image.open(io.BytesIO(data)) as opened:
        image = ImageOps.exif_transpose(opened).convert("RGB")  # photos are stored sideways with a rotation tag
    if options.on_page:
        options.on_page(0, 1)
    recognised, tables = ocr.read(image)
    if options.on_page:
        options.on_page(1, 1)
    if not recognised and not tables:
        raise ParseError("ocr_failed", "no text could be recognised in the image")
    lines = [Line(text=item.text, x0=item.x0, top=item.top, x1=item.x1, bottom=item.bottom,
                  size=(item.bottom - item.top) * 0.8, page=1, page_height=float(image.height),
                  confidence=item.confidence) for item in recognised]
    items: list[Line | TableItem] = sorted(lines, key=lambda line: (line.top, line.x0))
    for table in tables:
        position = next((i for i, item in enumerate(items) if item.top > table.top), len(items))
        items.insert(position, TableItem(rows=table.rows, top=table.top, bottom=table.bottom, x0=table.x0,
                                         x1=table.x1, page=1, columns=table.columns))
    builder = BlockBuilder(body=body_size([lines]))
    builder.page(items, meta={"ocr": True})
    blocks = [dataclasses.replace(block, page=None, page_end=None) for block in builder.finish()]
    confidence = statistics.fmean(item.confidence for item in recognised) if recognised else 1.0
    metadata = {"ocr": True, "ocr_confidence": round(confidence, 4), "width": image.width, "height": image.height,
                "format": format_.lower()}
    title = title_line(blocks)  # a notice's first line over its numbered headings: its title, not a chunk
    return ParsedDocument(title=title or stem, doc_type=doc_type, blocks=blocks[1:] if title else blocks,
                          metadata=metadata)


def parse_png(data: bytes, *, stem: str, options: ParseOptions) -> ParsedDocument:
    return parse(data, stem=stem, options=options, doc_type="png")


def parse_jpeg(data: bytes, *, stem: str, options: ParseOptions) -> ParsedDocument:
    return parse(data, stem=stem, options=options, doc_type="jpeg")
