"""JSON Lines: one object per line; ``title`` becomes a heading, ``text``/``content``/``body`` the text."""
from __future__ import annotations

import json

from knowledge.parsers.blocks import faq_block
from knowledge.parsers.decoding import decode_text
from knowledge.parsers.types import Block, ParsedDocument, ParseError, ParseOptions

TEXT_KEYS = ("text", "content", "body")
TITLE_LEVEL = 2


def parse(data: bytes, *, stem: str, options: ParseOptions) -> ParsedDocument:
    text, encoding = decode_text(data)
    blocks: list[Block] = []
    records = 0
    for number, line in enumerate(text.lstrip("\ufeff").split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ParseError("corrupt_file", f"line {number}: invalid JSON ({exc.msg} at column {exc.colno})") from exc
        if not isinstance(record, dict):
            raise ParseError("corrupt_file", f"line {number}: expected a JSON object, got {type(record).__name__}")
        records += 1
        blocks.extend(_record_blocks(record))
    metadata: dict = {"encoding": encoding, "records": records}
    return ParsedDocument(title=stem, doc_type="jsonl", blocks=blocks, metadata=metadata)


def _record_blocks(record: dict) -> list[Block]:
    text_key = next((key for key in TEXT_KEYS if key in record), None)
    title = _as_text(record.get("title"))
    meta = {key: value for key, value in record.items() if key not in ("title", text_key)}
    blocks = []
    if title:
        blocks.append(Block(kind="heading", text=" ".join(title.split()), level=TITLE_LEVEL, meta=meta))
    if text_key is not None:
        body = _as_text(record[text_key]).strip()
        if body:
            blocks.append(Block(kind="text", text=body, meta=meta))
    elif "question" in record and "answer" in record:
        extra = {key: value for key, value in meta.items() if key not in ("question", "answer")}
        blocks.append(faq_block(_as_text(record["question"]), _as_text(record["answer"]), meta=extra))
    return blocks


def _as_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
