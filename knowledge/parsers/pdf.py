"""PDF via pypdf: text per page with page numbers, paragraphs rebuilt from lines, headings from the outline."""
from __future__ import annotations

import io
import re

from pypdf import PasswordType, PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError

from knowledge.parsers.base import Block, ParsedDocument, ParseError, ParseOptions, is_cjk

_BLANK_LINE = re.compile(r"\n[ \t\u3000]*\n")
_SENTENCE_END = tuple("。！？!?.:：；;”」』）)")
_GENERATED_TITLE = re.compile(r"^(?:microsoft \w+ - |untitled\b)|\.\w{2,4}$", re.IGNORECASE)


def parse(data: bytes, *, stem: str, options: ParseOptions) -> ParsedDocument:
    reader = PdfReader(io.BytesIO(data))
    encrypted = reader.is_encrypted
    if encrypted:
        _open_encrypted(reader)
    paragraphs: dict[int, list[str]] = {}
    unreadable: list[int] = []
    for number, page in enumerate(reader.pages, start=1):
        try:
            text = page.extract_text() or ""
        except Exception:  # one damaged page (bad font, broken stream) should not lose the rest
            unreadable.append(number)
            continue
        paragraphs[number] = split_paragraphs(text)
    page_count = len(paragraphs) + len(unreadable)
    if not page_count:
        raise ParseError("corrupt_file", "the PDF has no pages")
    if unreadable and not paragraphs:
        raise ParseError("corrupt_file", "no page of the PDF could be read")
    blocks = _with_outline_headings(paragraphs, _outline(reader))
    if not any(b.text.strip() for b in blocks):
        raise ParseError(
            "empty_file", "the PDF has no extractable text (it may be scanned images; OCR is not supported)"
        )
    metadata: dict = {"pages": page_count, "encrypted": encrypted}
    if unreadable:
        metadata["unreadable_pages"] = unreadable
    info_title = ""
    try:
        info = reader.metadata
        info_title = ((info.title if info else None) or "").strip()
        if info and info.author:
            metadata["author"] = str(info.author)
    except Exception:  # a broken /Info dictionary must not sink an otherwise readable file
        pass
    if _GENERATED_TITLE.search(info_title):
        info_title = ""
    first_heading = next((b.text for b in blocks if b.kind == "heading"), "")
    return ParsedDocument(title=info_title or first_heading or stem, doc_type="pdf", blocks=blocks, metadata=metadata)


def _open_encrypted(reader: PdfReader) -> None:
    """Open PDFs that are encrypted with an empty user password (common for 'no copying' files)."""
    try:
        result = reader.decrypt("")
    except (DependencyError, FileNotDecryptedError, PdfReadError, NotImplementedError) as exc:
        raise ParseError("corrupt_file", f"the PDF is encrypted and cannot be opened ({exc})") from exc
    if result == PasswordType.NOT_DECRYPTED:
        raise ParseError("corrupt_file", "the PDF is encrypted with a password; upload an unencrypted copy")


def split_paragraphs(text: str) -> list[str]:
    """Rebuild paragraphs from extracted lines.

    A blank line always ends a paragraph. Otherwise a line ends one when it is clearly shorter than
    the page's full lines and ends like a sentence, or when it is very short (headings, list items).
    Wrapped lines are rejoined: without a space between CJK characters, de-hyphenated for English.
    """
    paragraphs: list[str] = []
    for chunk in _BLANK_LINE.split(text.replace("\r\n", "\n").replace("\r", "\n")):
        lines = [line.strip() for line in chunk.split("\n")]
        lines = [line for line in lines if line]
        if not lines:
            continue
        full = max(_width(line) for line in lines)
        current: list[str] = []
        for line in lines:
            current.append(line)
            width = _width(line)
            if full < 24 or width < 0.5 * full or (width < 0.85 * full and line.endswith(_SENTENCE_END)):
                paragraphs.append(_join_lines(current))
                current = []
        if current:
            paragraphs.append(_join_lines(current))
    return [p for p in paragraphs if p]


def _width(line: str) -> int:
    return sum(2 if is_cjk(char) else 1 for char in line)


def _join_lines(lines: list[str]) -> str:
    text = lines[0]
    for line in lines[1:]:
        if text.endswith("-") and len(text) > 1 and text[-2].isalpha() and line[:1].islower():
            text = text[:-1] + line
        elif is_cjk(text[-1]) or is_cjk(line[0]):
            text += line
        else:
            text += " " + line
    return text


def _outline(reader: PdfReader) -> list[tuple[int, str, int]]:
    """``(level, title, page)`` for each bookmark, in outline order; empty when there is none or it is broken."""
    entries: list[tuple[int, str, int]] = []

    def walk(items: list, level: int) -> None:  # type: ignore[type-arg]
        for item in items:
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            title = " ".join(str(getattr(item, "title", "") or "").split())
            index = reader.get_destination_page_number(item)
            if title and index is not None and index >= 0:
                entries.append((min(level, 6), title, index + 1))

    try:
        walk(reader.outline, 1)
    except Exception:  # outlines are optional; a damaged one just means no headings
        return []
    return entries


def _with_outline_headings(paragraphs: dict[int, list[str]], outline: list[tuple[int, str, int]]) -> list[Block]:
    """Blocks per page; each bookmark becomes a heading at the paragraph that starts with its title."""
    by_page: dict[int, list[tuple[int, str]]] = {}
    for level, title, page in outline:
        by_page.setdefault(page, []).append((level, title))
    blocks: list[Block] = []
    for page, texts in paragraphs.items():
        pending = by_page.get(page, [])
        remaining = list(texts)
        for level, title in pending:
            for index, paragraph in enumerate(remaining):
                rest = _strip_prefix(paragraph, title)
                if rest is None:
                    continue
                blocks.extend(Block(kind="text", text=text, page=page) for text in remaining[:index])
                blocks.append(Block(kind="heading", text=title, level=level, page=page))
                remaining = ([rest] if rest else []) + remaining[index + 1:]
                break
            else:
                blocks.append(Block(kind="heading", text=title, level=level, page=page))
        blocks.extend(Block(kind="text", text=text, page=page) for text in remaining)
    return blocks


def _strip_prefix(paragraph: str, title: str) -> str | None:
    """The paragraph after ``title`` (compared ignoring whitespace), or ``None`` if it does not start with it."""
    wanted = "".join(title.split())
    position = 0
    for char in wanted:
        while position < len(paragraph) and paragraph[position].isspace():
            position += 1
        if position >= len(paragraph) or paragraph[position] != char:
            return None
        position += 1
    return paragraph[position:].strip()
