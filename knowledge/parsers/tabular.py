"""CSV and XLSX: question–answer sheets as one FAQ block per row; other sheets as tables (``sheets``), one
section per sheet."""
from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Iterable
from dataclasses import replace
from typing import Any, cast

import openpyxl

from knowledge.parsers.blocks import faq_block
from knowledge.parsers.decoding import decode_text
from knowledge.parsers.sheets import fill_merged, merged_ranges, table_blocks
from knowledge.parsers.types import Block, ParsedDocument, ParseOptions
from knowledge.titles import meaningful_title

QUESTION_HEADERS = frozenset({"question", "questions", "问题", "问", "q", "提问", "问句", "标准问题", "query"})
ANSWER_HEADERS = frozenset({"answer", "answers", "答案", "答", "a", "回答", "答复", "标准答案", "response", "reply"})
_HEADER_TRIM = " \t:：*#"


# Columns read from a sheet: a FAQ needs a few; a cell far to the right (column XFD) must not make every
# row 16,384 cells wide.
MAX_COLUMNS = 100


def parse_csv(data: bytes, *, stem: str, options: ParseOptions) -> ParsedDocument:
    text, encoding = decode_text(data)
    text = text.lstrip("\ufeff")
    # The csv module refuses fields over 131,072 characters; a long answer is fine up to the file's text budget.
    csv.field_size_limit(max(csv.field_size_limit(), options.max_chars))
    rows = list(csv.reader(io.StringIO(text), dialect=_sniff_dialect(text)))
    metadata: dict = {"encoding": encoding}
    if is_faq_sheet(rows):
        blocks, columns = faq_blocks(rows)
    else:
        blocks = table_blocks([(n, list(row[:MAX_COLUMNS])) for n, row in enumerate(rows, start=1)], meta={})
        columns = _header(blocks)
        metadata["tables"] = len(blocks)
    metadata.update(faq_count=sum(b.kind == "faq" for b in blocks), columns=columns)
    return ParsedDocument(title=stem, doc_type="csv", blocks=blocks, metadata=metadata)


def _header(blocks: list[Block]) -> list[str]:
    """The first table block's first row (a table block always has rows); [] without blocks."""
    return list(cast("tuple[tuple[str, ...], ...]", blocks[0].rows)[0]) if blocks else []


def parse_xlsx(data: bytes, *, stem: str, options: ParseOptions) -> ParsedDocument:
    # The container was already checked for ZIP bombs by base._sniff; read_only streams the sheets.
    workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        sheets = []
        for sheet in workbook.worksheets:
            rows = _sheet_rows(sheet)
            sheets.append((sheet.title, rows, merged_ranges(workbook, sheet, MAX_COLUMNS) if rows else []))
        title = (workbook.properties.title or "").strip()
    finally:
        workbook.close()
    sheets = [sheet for sheet in sheets if sheet[1]]
    blocks: list[Block] = []
    columns: dict[str, list[str]] = {}
    for name, rows, merges in sheets:
        if is_faq_sheet([cells for _, cells in rows]):
            sheet_blocks, sheet_columns = faq_blocks_numbered(rows, meta={"sheet": name})
        else:
            filled, spanning = fill_merged(rows, merges)
            sheet_blocks = table_blocks(filled, meta={"sheet": name}, spanning=spanning)
            if len(sheets) == 1:  # no heading names the sheet: its caption does, unless its name is 「Sheet1」
                sheet_blocks = [_named_by_sheet(block, name) for block in sheet_blocks]
            sheet_columns = _header(sheet_blocks)
        if not sheet_blocks:
            continue
        if len(sheets) > 1:
            blocks.append(Block(kind="heading", text=name, level=1, meta={"sheet": name}))
        blocks.extend(sheet_blocks)
        columns[name] = sheet_columns
    metadata: dict = {
        "sheets": [name for name, _, _ in sheets],
        "faq_count": sum(b.kind == "faq" for b in blocks),
        "columns": columns,
    }
    if tables := sum(b.kind == "table" for b in blocks):
        metadata["tables"] = tables
    return ParsedDocument(title=title or stem, doc_type="xlsx", blocks=blocks, metadata=metadata)


def _named_by_sheet(block: Block, name: str) -> Block:
    """A table whose caption starts with its sheet's name (「价格表 · 生效日期：2026-01-01」), when that name is the
    author's (``meaningful_title``) and the title rows do not already say it."""
    sheet = meaningful_title(name)
    caption = str(block.meta.get("caption") or "")
    if block.kind != "table" or not sheet or sheet in caption:
        return block
    return replace(block, meta={**block.meta, "caption": f"{sheet} · {caption}" if caption else sheet})


def is_faq_sheet(rows: list[list[str]]) -> bool:
    """Question–answer pairs: a header naming a question or an answer column, or rows of at most two cells
    (a question and its answer without a header). Any other sheet is a table."""
    filled = [row for row in rows if any((cell or "").strip() for cell in row)]
    if not filled:
        return True
    header = {(cell or "").strip(_HEADER_TRIM).lower() for cell in filled[0]}
    if header & (QUESTION_HEADERS | ANSWER_HEADERS):
        return True
    return all(_last_filled(row) <= 2 for row in filled)


def _last_filled(row: list[str]) -> int:
    return max((i + 1 for i, cell in enumerate(row) if (cell or "").strip()), default=0)


def _sheet_rows(sheet) -> list[tuple[int, list[str]]]:
    """The sheet's non-empty rows with their row numbers, at most ``MAX_COLUMNS`` cells each.

    The sheet's declared size (``<dimension ref="A1:XFD1048576"/>``) is ignored: openpyxl's read-only
    mode would pad every row to the declared width and add the declared rows, so a 5 KB file could
    ask for 100 GB. Without it, rows are as long as their cells and missing rows cost nothing.
    """
    sheet.reset_dimensions()
    rows = []
    for number, row in enumerate(sheet.iter_rows(values_only=True, max_col=MAX_COLUMNS), start=1):
        if row.count(None) == len(row):  # a missing row (openpyxl fills the gaps between rows)
            continue
        cells = [_cell_text(value) for value in row]
        while cells and not cells[-1].strip():
            cells.pop()
        if cells:
            rows.append((number, cells))
    return rows


def faq_blocks(rows: Iterable[list[str]], *, meta: dict | None = None) -> tuple[list[Block], list[str]]:
    """FAQ blocks from rows, plus the header used (``[]`` when the first row is data).

    Columns come from a header row naming a question and/or an answer column (English or Chinese,
    any case); without one, the first column is the question and the second the answer.
    """
    return faq_blocks_numbered(enumerate(rows, start=1), meta=meta)


def faq_blocks_numbered(rows: Iterable[tuple[int, list[str]]], *, meta: dict | None = None,
                        ) -> tuple[list[Block], list[str]]:
    """``faq_blocks`` of ``(row number, cells)`` pairs (a sheet's rows, with the gaps between them)."""
    numbered = [(number, [cell.strip() for cell in row]) for number, row in rows]
    numbered = [(number, row) for number, row in numbered if any(row)]
    if not numbered:
        return [], []
    header = [cell.strip(_HEADER_TRIM).lower() for cell in numbered[0][1]]
    q_index = next((i for i, name in enumerate(header) if name in QUESTION_HEADERS), None)
    a_index = next((i for i, name in enumerate(header) if name in ANSWER_HEADERS), None)
    columns: list[str] = []
    if q_index is not None or a_index is not None:
        columns = numbered.pop(0)[1]
    if q_index is None:
        q_index = 0 if a_index != 0 else 1
    if a_index is None:
        a_index = 1 if q_index == 0 else 0
    blocks = []
    for number, row in numbered:
        question = row[q_index] if q_index < len(row) else ""
        answer = row[a_index] if a_index < len(row) else ""
        if not question and not answer:
            continue
        extra = {
            columns[i]: value
            for i, value in enumerate(row)
            if i not in (q_index, a_index) and i < len(columns) and columns[i] and value
        }
        row_meta = {**(meta or {}), "row": number}
        if extra:
            row_meta["fields"] = extra
        blocks.append(faq_block(question, answer, meta=row_meta))
    return blocks, columns


def _sniff_dialect(text: str) -> type[csv.Dialect] | csv.Dialect:
    try:
        return csv.Sniffer().sniff(text[:8192], delimiters=",\t;|")
    except csv.Error:
        return csv.excel


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    return str(value)
