"""Word DOCX via python-docx: paragraphs and tables in body order, heading levels from styles; pictures (in the body
and in table cells) by OCR."""
from __future__ import annotations

import dataclasses
import io
import re
from collections.abc import Iterator

import docx
from docx.document import Document as DocxDocument
from docx.oxml.ns import qn
from docx.oxml.xmlchemy import BaseOxmlElement
from docx.table import Table, _Cell
from docx.text.paragraph import Paragraph

from knowledge.parsers.blocks import CAPTION_STYLES, is_table_caption, table_block
from knowledge.parsers.headings import title_line
from knowledge.parsers.pictures import PictureReader, numbered_around_pictures
from knowledge.parsers.types import Block, ParsedDocument, ParseOptions
from knowledge.titles import metadata_title

_HEADING_STYLE = re.compile(r"^(?:heading|标题)\s*(\d)$", re.IGNORECASE)
_TITLE_STYLES = frozenset({"title", "标题"})
_MAX_STYLE_CHAIN = 10
_P, _TBL, _SDT, _SDT_CONTENT = qn("w:p"), qn("w:tbl"), qn("w:sdt"), qn("w:sdtContent")


def parse(data: bytes, *, stem: str, options: ParseOptions) -> ParsedDocument:
    # The container was already checked for ZIP bombs and the document part by base._sniff.
    document: DocxDocument = docx.Document(io.BytesIO(data))
    blocks: list[Block] = []
    title_styled: Block | None = None  # the first block, when it is in the Title style
    title_text = ""  # the first paragraph, when it is the title of a document numbered without heading styles
    items = list(_body_items(document))
    pictures = PictureReader(options, sum(len(_picture_ids(item)) for item in items))
    for item in items:
        if isinstance(item, Paragraph):
            block = _paragraph_block(item)
            style = ((item.style.name if item.style is not None else "") or "").strip().lower()
            if block is not None and not blocks and style in _TITLE_STYLES:
                title_styled = block = dataclasses.replace(block, meta={"title": True})  # no section: the title
        elif isinstance(item, Table):
            block = _table(item, document, pictures)
        else:
            block = None
        if block is not None:
            if isinstance(item, Paragraph) and block.kind == "text" and is_table_caption(block.text, styled=style in CAPTION_STYLES):
                block = dataclasses.replace(block, meta={**block.meta, "table_caption": True})
            blocks.append(block)
        if isinstance(item, Paragraph):  # its pictures, after its text, where they stand
            for picture in _picture_ids(item):
                blocks.extend(pictures.blocks(_picture_blob(document, picture)))
    blocks = _captions_to_tables(blocks)
    styled = [block for block in blocks if block.kind == "heading"]
    if not styled:
        # No heading styles: the structure is in the numbering (第一章, 一、, （一）, 1.1), as in most Chinese documents.
        blocks = numbered_around_pictures(blocks)
        if first_line := title_line(blocks):  # a title typed as a plain first paragraph, as over a 通知 or 办法
            title_text, blocks = first_line, blocks[1:]
    elif len(styled) == 1 and blocks[0] is title_styled:
        # Only the title (Title style) is styled: the numbered headings are its sections, one level down.
        blocks = [blocks[0]] + [dataclasses.replace(block, level=min(block.level + blocks[0].level, 6))
                                if block.kind == "heading" else block for block in numbered_around_pictures(blocks[1:])]
    core = document.core_properties
    first_heading = title_text or next((b.text for b in blocks if b.kind == "heading"), "")
    metadata: dict = {}
    if core.author:
        metadata["author"] = core.author
    if core.created:
        metadata["created"] = core.created.isoformat()
    if core.modified:
        metadata["modified"] = core.modified.isoformat()
    pictures.finish(metadata)
    title = metadata_title(core.title) or first_heading or stem  # not 「Microsoft Word - 文档1.docx」
    return ParsedDocument(title=title, doc_type="docx", blocks=blocks, metadata=metadata)


def _captions_to_tables(blocks: list[Block]) -> list[Block]:
    """A caption paragraph (Caption style, or 「表1 …」) right before a table, or right after one that has none and
    is not followed by another table, becomes that table's caption (``meta["caption"]``): it travels in the table's
    chunk instead of making a chunk of its own. A caption with no table next to it stays a paragraph."""
    out: list[Block] = []
    index = 0
    while index < len(blocks):
        block = blocks[index]
        after = blocks[index + 1] if index + 1 < len(blocks) else None
        if block.meta.get("table_caption"):
            meta = {k: v for k, v in block.meta.items() if k != "table_caption"}
            text = " ".join(block.text.split())
            if after is not None and after.kind == "table" and not after.meta.get("caption"):
                out.append(dataclasses.replace(after, meta={**after.meta, "caption": text}))
                index += 2
                continue
            previous = out[-1] if out else None
            if previous is not None and previous.kind == "table" and not previous.meta.get("caption") and (
                    after is None or after.kind != "table"):
                out[-1] = dataclasses.replace(previous, meta={**previous.meta, "caption": text})
                index += 1
                continue
            block = dataclasses.replace(block, meta=meta)
        out.append(block)
        index += 1
    return out


def _body_items(document: DocxDocument) -> Iterator[Paragraph | Table]:
    """Body paragraphs and tables in order, including those wrapped in content controls (``w:sdt``),
    which ``Document.iter_inner_content`` skips."""
    body = document._body

    def walk(element: BaseOxmlElement) -> Iterator[Paragraph | Table]:
        for child in element.iterchildren():
            if child.tag == _P:
                yield Paragraph(child, body)
            elif child.tag == _TBL:
                yield Table(child, body)
            elif child.tag == _SDT:
                content = child.find(_SDT_CONTENT)
                if content is not None:
                    yield from walk(content)

    yield from walk(document.element.body)


def _paragraph_block(paragraph: Paragraph) -> Block | None:
    text = paragraph.text.strip()
    if not text:
        return None
    style_name = (paragraph.style.name if paragraph.style is not None else "") or ""
    if style_name.lower().startswith("toc "):
        return None  # table-of-contents lines repeat the headings with page numbers
    level = _heading_level(paragraph, style_name)
    if level:
        return Block(kind="heading", text=" ".join(text.split()), level=level)
    return Block(kind="text", text=text)


def _heading_level(paragraph: Paragraph, style_name: str) -> int:
    """Level 1–6 from the style name ("Heading 2", "标题 2", "Title"), else from an outline level."""
    name = style_name.strip()
    match = _HEADING_STYLE.match(name)
    if match:
        return min(max(int(match.group(1)), 1), 6)
    if name.lower() in _TITLE_STYLES:
        return 1
    outline = _outline_level(paragraph._p.pPr)
    style = paragraph.style
    for _ in range(_MAX_STYLE_CHAIN):
        if outline is not None or style is None:
            break
        outline = _outline_level(style.element.pPr)
        style = style.base_style
    # w:outlineLvl 0..8 are heading levels 1..9; 9 means body text.
    if outline is not None and 0 <= outline <= 8:
        return min(outline + 1, 6)
    return 0


def _outline_level(ppr) -> int | None:
    if ppr is None:
        return None
    element = ppr.find(qn("w:outlineLvl"))
    if element is None:
        return None
    try:
        return int(element.get(qn("w:val")))
    except (TypeError, ValueError):
        return None


def _table(table: Table, document: DocxDocument, pictures: PictureReader) -> Block | None:
    """The table's cells row by row, each with the text of its pictures (by OCR) after its own text; a table with
    pictures read is marked as OCR, with their confidence. A merged cell (repeated by python-docx in each grid
    position it spans) is read once."""
    read: dict[object, str] = {}  # by cell element: the dict keeps each proxy alive, so a merged cell is found again
    confidences: list[float] = []
    rows = []
    for row in table.rows:
        cells = []
        for cell in row.cells:
            if cell._tc not in read:
                parts = [cell.text.strip()]
                for picture in _picture_ids(cell):
                    text, confidence = pictures.cell_text(_picture_blob(document, picture))
                    parts.append(text)
                    if confidence is not None:
                        confidences.append(confidence)
                read[cell._tc] = "\n".join(part for part in parts if part)
            cells.append(read[cell._tc])
        rows.append(cells)
    meta = {"ocr": True, "ocr_confidence": round(min(confidences), 4)} if confidences else {}
    return table_block(rows, meta=meta)


def _picture_ids(item: Paragraph | Table | _Cell) -> list[str]:
    """Relationship ids of the embedded pictures (DrawingML ``a:blip``, VML ``v:imagedata``) of a paragraph, a table
    or a cell, in order."""
    return list(item._element.xpath(".//*[local-name()='blip']/@*[local-name()='embed']"
                                   " | .//*[local-name()='imagedata']/@*[local-name()='id']"))


def _picture_blob(document: DocxDocument, relationship: str) -> bytes | None:
    part = document.part.related_parts.get(relationship)
    return getattr(part, "blob", None)
