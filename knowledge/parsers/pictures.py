"""Pictures inside documents (DOCX inline images, in the body or in table cells; PPTX picture shapes), read by OCR.

Each picture's text is a block placed where the picture stands, marked like a scanned page's
(``{"ocr": True, "ocr_confidence": c, "picture": True}``); one in a DOCX table cell goes into that cell's text
(``PictureReader.cell_text``). Bounded by ``ParseOptions.max_pictures`` and the file's OCR pages: pictures over a
budget, too large, unreadable or unrecognised are skipped and counted (``pictures_skipped``), icons are passed over,
and a repeated picture is read once (docs/ingestion.md).
"""
from __future__ import annotations

import hashlib
import io

from knowledge.parsers.blocks import table_block
from knowledge.parsers.budget import out_of_time
from knowledge.parsers.headings import HeadingDetector, with_numbered_headings
from knowledge.parsers.layout import join_lines
from knowledge.parsers.types import Block, ParseError, ParseOptions

MIN_SIDE = 32
MIN_PIXELS = 20_000


class PictureReader:
    """Reads a file's pictures one by one within its budgets; ``total`` is how many it may be asked to read."""

    def __init__(self, options: ParseOptions, total: int) -> None:
        self.options = options
        self.total = total
        self.asked = 0
        self.read_count = 0
        self.skipped = 0
        self._seen: set[str] = set()

    def blocks(self, blob: bytes | None, *, page: int | None = None) -> list[Block]:
        """The blocks of one picture's text (none for a picture without text, repeated, tiny or skipped)."""
        if self.options.on_page and self.total:
            self.options.on_page(min(self.asked, self.total), self.total)
        self.asked += 1
        if not blob:
            return []
        digest = hashlib.sha1(blob).hexdigest()
        if digest in self._seen:
            return []
        self._seen.add(digest)
        image = self._open(blob)
        if image is None:
            return []
        options = self.options
        if (self.read_count >= options.max_pictures or options.usage.ocr_pages >= options.max_ocr_pages
                or (options.preview and out_of_time(options))):
            self.skipped += 1
            return []
        from knowledge.parsers import ocr

        options.usage.ocr_pages += 1
        self.read_count += 1
        try:
            lines, tables = ocr.read(image)
        except ParseError:  # OCR cannot run here: the picture is skipped, the document is not failed
            self.skipped += 1
            return []
        return _as_blocks(lines, tables, page)

    def cell_text(self, blob: bytes | None) -> tuple[str, float | None]:
        """``(text, confidence)`` of a picture inside a table cell: its lines rejoined (a table in it row by row,
        cells apart), to stand in the cell after the cell's own text; ``("", None)`` when nothing was read."""
        text: list[str] = []
        chars, weighted = 0, 0.0
        for block in self.blocks(blob):
            if block.kind == "table" and block.rows:
                text.extend(" ".join(cell for cell in row if cell) for row in block.rows)
                continue
            lines = block.text.split("\n")
            text.append(join_lines(lines))
            chars += len(block.text)
            weighted += block.meta.get("ocr_confidence", 1.0) * len(block.text)
        if not text:
            return "", None
        return join_lines(text), (weighted / chars if chars else 1.0)

    def _open(self, blob: bytes):
        """The picture as RGB on white, or None (counted when it is unreadable or too large, not when tiny)."""
        from PIL import Image

        from knowledge.parsers import ocr

        try:
            with Image.open(io.BytesIO(blob)) as probe:
                width, height = probe.size
                if min(width, height) < MIN_SIDE or width * height < MIN_PIXELS:
                    return None
                if width * height > ocr.MAX_PIXELS:
                    self.skipped += 1
                    return None
                probe.load()
                if probe.mode in ("RGBA", "LA", "PA") or (probe.mode == "P" and "transparency" in probe.info):
                    rgba = probe.convert("RGBA")
                    image = Image.new("RGB", rgba.size, "white")
                    image.paste(rgba, mask=rgba.getchannel("A"))
                    return image
                return probe.convert("RGB")
        except MemoryError:
            raise
        except Exception:  # noqa: BLE001 - EMF/WMF, damaged or bomb pictures: skipped, never fail the document
            self.skipped += 1
            return None

    def finish(self, metadata: dict) -> None:
        """Progress to the end, and the counts into the document's ``metadata``."""
        if self.options.on_page and self.total:
            self.options.on_page(self.total, self.total)
        if self.read_count:
            metadata["pictures_read"] = self.read_count
        if self.skipped:
            metadata["pictures_skipped"] = self.skipped


def _as_blocks(lines, tables, page: int | None) -> list[Block]:
    """Lines top to bottom as one text block between tables; each block marked as a picture's OCR."""
    items = sorted([(line.top, "line", line) for line in lines] + [(table.top, "table", table) for table in tables],
                   key=lambda item: item[0])
    blocks: list[Block] = []
    run: list = []

    def flush() -> None:
        if run:
            chars = sum(len(line.text) for line in run) or 1
            confidence = sum(line.confidence * len(line.text) for line in run) / chars
            blocks.append(Block(kind="text", text="\n".join(line.text for line in run), page=page,
                                meta={"ocr": True, "ocr_confidence": round(confidence, 4), "picture": True}))
            run.clear()

    for _, kind, item in items:
        if kind == "line":
            run.append(item)
            continue
        flush()
        block = table_block(item.rows, page=page, meta={"ocr": True, "picture": True})
        if block is not None:
            blocks.append(block)
    flush()
    return blocks


def numbered_around_pictures(blocks: list[Block], *, detector: HeadingDetector | None = None) -> list[Block]:
    """``with_numbered_headings`` over the document's own text only: a picture's lines never become headings."""
    detector = detector or HeadingDetector()
    out: list[Block] = []
    segment: list[Block] = []
    for block in blocks:
        if block.meta.get("picture"):
            out.extend(with_numbered_headings(segment, detector=detector))
            segment = []
            out.append(block)
        else:
            segment.append(block)
    out.extend(with_numbered_headings(segment, detector=detector))
    return out
