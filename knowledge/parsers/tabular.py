"""CSV and XLSX question–answer sheets: one FAQ block per row."""
from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Iterable
from typing import Any

import openpyxl

from knowledge.parsers.base import Block, ParsedDocument, ParseOptions, decode_text, faq_block

QUESTION_HEADERS = frozenset({"question", "questions", "问题", "问", "q", "提问", "问句", "标准问题", "query"})
ANSWER_HEADERS = frozenset({"answer", "answers", "答案", "答", "a", "回答", "答复", "标准答案", "response", "reply"})
_HEADER_TRIM = " \t:：*#"


def parse_csv(data: bytes, *, stem: str, options: ParseOptions) -> ParsedDocument:
    text, encoding = decode_text(data)
    text = text.lstrip("\ufeff")
    rows = list(csv.reader(io.StringIO(text), dialect=_sniff_dialect(text)))
    blocks, columns = faq_blocks(rows)
    metadata: dict = {"encoding": encoding, "faq_count": len(blocks), "columns": columns}
    return ParsedDocument(title=stem, doc_type="csv", blocks=blocks, metadata=metadata)


def parse_xlsx(data: bytes, *, stem: str, options: ParseOptions) -> ParsedDocument:
    # The container was already checked for ZIP bombs by base._sniff; read_only streams the sheets.
    workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        sheets = [
            (sheet.title, [[_cell_text(value) for value in row] for row in sheet.iter_rows(values_only=True)])
            for sheet in workbook.worksheets
        ]
        title = (workbook.properties.title or "").strip()
    finally:
        workbook.close()
    sheets = [(name, rows) for name, rows in sheets if any(any(cell.strip() for cell in row) for row in rows)]
    blocks: list[Block] = []
    columns: dict[str, list[str]] = {}
    for name, rows in sheets:
        sheet_blocks, sheet_columns = faq_blocks(rows, meta={"sheet": name})
        if not sheet_blocks:
            continue
        if len(sheets) > 1:
            blocks.append(Block(kind="heading", text=name, level=1, meta={"sheet": name}))
        blocks.extend(sheet_blocks)
        columns[name] = sheet_columns
    metadata: dict = {
        "sheets": [name for name, _ in sheets],
        "faq_count": sum(b.kind == "faq" for b in blocks),
        "columns": columns,
    }
    return ParsedDocument(title=title or stem, doc_type="xlsx", blocks=blocks, metadata=metadata)


def faq_blocks(rows: Iterable[list[str]], *, meta: dict | None = None) -> tuple[list[Block], list[str]]:
    """FAQ blocks from rows, plus the header used (``[]`` when the first row is data).

    Columns come from a header row naming a question and/or an answer column (English or Chinese,
    any case); without one, the first column is the question and the second the answer.
    """
    numbered = [(number, [cell.strip() for cell in row]) for number, row in enumerate(rows, start=1)]
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
