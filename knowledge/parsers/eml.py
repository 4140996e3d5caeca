"""E-mail (EML) via the stdlib ``email`` package: body text plus supported attachments parsed in turn."""
from __future__ import annotations

import dataclasses
from email import policy
from email.message import EmailMessage, Message, MIMEPart
from email.parser import BytesParser

from knowledge.parsers.base import SUPPORTED_EXTENSIONS, parse_nested, split_extension
from knowledge.parsers.budget import ResourceLimit
from knowledge.parsers.decoding import decode_text
from knowledge.parsers.html import blocks_from_fragment
from knowledge.parsers.text import paragraph_blocks
from knowledge.parsers.types import Block, ParsedDocument, ParseError, ParseOptions

MAX_NESTING = 3  # e-mails attached to e-mails attached to e-mails…
# Mail clients label GBK text "gb2312" and UTF-8 text "ascii"; the supersets decode both correctly.
_CHARSET_UPGRADES = {
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "cp936": "gb18030",
    "ascii": "utf-8",
    "us-ascii": "utf-8",
}


def parse(data: bytes, *, stem: str, options: ParseOptions) -> ParsedDocument:
    message = BytesParser(policy=policy.default).parsebytes(data)
    if not isinstance(message, EmailMessage) or not message.keys():
        raise ParseError("type_mismatch", "the file has an .eml name but has no e-mail headers")
    metadata: dict = {}
    for header in ("from", "to", "cc", "date", "message-id"):
        value = _header(message, header)
        if value:
            metadata[header.replace("-", "_")] = value
    date = message.get("date")
    if date is not None and getattr(date, "datetime", None) is not None:
        metadata["date"] = date.datetime.isoformat()
    subject = _header(message, "subject")

    blocks = _body_blocks(message)
    skipped: list[str] = []
    failed: list[dict] = []
    for part in message.iter_attachments():
        _add_attachment(part, options, blocks, skipped, failed)
    if skipped:
        metadata["skipped_attachments"] = skipped
    if failed:
        metadata["failed_attachments"] = failed
    return ParsedDocument(title=subject or stem, doc_type="eml", blocks=blocks, metadata=metadata)


def _header(message: EmailMessage, name: str) -> str:
    try:
        value = message.get(name)
    except Exception:  # noqa: BLE001 - a malformed header is dropped, not fatal
        return ""
    return " ".join(str(value).split()) if value is not None else ""


def _body_blocks(message: EmailMessage) -> list[Block]:
    body = message.get_body(preferencelist=("plain", "html"))
    if body is None:
        return []
    text = _part_text(body)
    if body.get_content_subtype() == "html":
        return blocks_from_fragment(text)
    return paragraph_blocks(text)


def _part_text(part: MIMEPart) -> str:
    """Decode a text part with its declared charset (GB2312/GBK read as GB18030), else by detection."""
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return str(part.get_payload())
    charset = (part.get_content_charset() or "").lower()
    charset = _CHARSET_UPGRADES.get(charset, charset)
    if charset:
        try:
            return payload.decode(charset).replace("\r\n", "\n")
        except (LookupError, UnicodeDecodeError):
            pass
    return decode_text(payload)[0] if payload.strip() else ""


def _add_attachment(
    part: MIMEPart,
    options: ParseOptions,
    blocks: list[Block],
    skipped: list[str],
    failed: list[dict],
) -> None:
    content_type = part.get_content_type()
    name = part.get_filename() or ""
    if content_type == "message/rfc822":
        name = name or "attached-message.eml"
        inner = part.get_payload()
        inner_message = inner[0] if isinstance(inner, list) and inner else inner
        payload = inner_message.as_bytes() if isinstance(inner_message, Message) else b""
    else:
        decoded = part.get_payload(decode=True)
        payload = decoded if isinstance(decoded, bytes) else b""
    if not name:
        skipped.append(f"(unnamed {content_type})")
        return
    if split_extension(name)[1] not in SUPPORTED_EXTENSIONS or options.depth >= MAX_NESTING:
        skipped.append(name)
        return
    try:
        parsed = parse_nested(name, payload, dataclasses.replace(options, depth=options.depth + 1))
    except ResourceLimit:
        raise  # the budgets are the whole file's: an attachment over one is the e-mail over it
    except ParseError as exc:
        failed.append({"name": name, "code": exc.code, "message": exc.message})
        return
    blocks.append(Block(kind="heading", text=name, level=1, meta={"attachment": name}))
    for block in parsed.blocks:
        level = min(block.level + 1, 6) if block.kind == "heading" else block.level
        blocks.append(dataclasses.replace(block, level=level, meta={**block.meta, "attachment": name}))
