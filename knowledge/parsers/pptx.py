"""PowerPoint PPTX via python-pptx: one section per slide (its title the heading), text, tables, pictures (by OCR)
and notes."""
from __future__ import annotations

import io
from collections.abc import Iterator

from knowledge.parsers.blocks import table_block
from knowledge.parsers.budget import cut_short, over_count
from knowledge.parsers.pictures import PictureReader
from knowledge.parsers.types import Block, ParsedDocument, ParseOptions
from knowledge.titles import metadata_title


def parse(data: bytes, *, stem: str, options: ParseOptions) -> ParsedDocument:
    from pptx import Presentation

    # The container was already checked for ZIP bombs and the presentation part by base._sniff.
    deck = Presentation(io.BytesIO(data))
    blocks: list[Block] = []
    notes_count = 0
    slides = list(deck.slides)
    if over_count(options, "pages", options.max_pages, len(slides), "slides in the presentation"):
        slides = slides[:options.max_pages]
        cut_short(options, "pages", options.max_pages, pages_read=len(slides))
    pictures = PictureReader(options, sum(_picture_blob(shape) is not None for slide in slides
                                          for shape in _shapes(slide.shapes)))
    for number, slide in enumerate(slides, start=1):
        title_shape = slide.shapes.title
        title = " ".join((title_shape.text_frame.text if title_shape is not None and title_shape.has_text_frame
                          else "").split())
        blocks.append(Block(kind="heading", text=title or f"第 {number} 页", level=1, page=number))
        for shape in _shapes(slide.shapes):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if getattr(shape, "has_table", False) and shape.has_table:
                block = table_block([[cell.text for cell in row.cells] for row in shape.table.rows], page=number)
                if block is not None:
                    blocks.append(block)
            elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
                lines = [" ".join(p.text.split()) for p in shape.text_frame.paragraphs]
                text = "\n".join(line for line in lines if line)
                if text:
                    blocks.append(Block(kind="text", text=text, page=number))
            elif (blob := _picture_blob(shape)) is not None:
                blocks.extend(pictures.blocks(blob, page=number))
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            text = (notes.text if notes is not None else "").strip()
            if text:
                notes_count += 1
                blocks.append(Block(kind="text", text=f"备注：{text}", page=number, meta={"notes": True}))
    core = deck.core_properties
    metadata: dict = {"slides": len(deck.slides), "notes": notes_count}
    pictures.finish(metadata)
    if core.author:
        metadata["author"] = core.author
    first_title = next((b.text for b in blocks if b.kind == "heading" and not b.text.startswith("第 ")), "")
    return ParsedDocument(title=metadata_title(core.title) or first_title or stem, doc_type="pptx", blocks=blocks,
                          metadata=metadata)


def _picture_blob(shape) -> bytes | None:
    """The image of a picture shape (or a placeholder holding a picture), else None."""
    if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        return None
    try:
        return shape.image.blob
    except Exception:  # noqa: BLE001 - not a picture, or a linked picture whose image is not in the file
        return None


def _shapes(shapes) -> Iterator:
    """Shapes top to bottom, left to right, with grouped shapes opened up."""
    def position(shape) -> tuple[int, int]:
        return (shape.top or 0, shape.left or 0)

    for shape in sorted(shapes, key=position):
        if shape.shape_type == 6:  # MSO_SHAPE_TYPE.GROUP
            yield from _shapes(shape.shapes)
        else:
            yield shape
