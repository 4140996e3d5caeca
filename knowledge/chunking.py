"""Chunking: parsed blocks to retrieval-sized chunks with section paths and enriched text."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from knowledge.parsers.blocks import markdown_table
from knowledge.parsers.types import Block, ParsedDocument

# A sentence ends after CJK/ASCII terminal punctuation (plus any closing quotes or brackets),
# after an ASCII period followed by whitespace, or at a newline.
_SENTENCE_END = re.compile(r"""[。！？；!?;…]+[”’」』）)\]"'》]*|\.["')\]]*(?=\s)|\n""")
# Places where a sentence longer than the limit can be cut without breaking a word.
_SOFT_BREAK = re.compile(r"[，,、：:\s]")
_TABLE_SEPARATOR = re.compile(r"^\|?\s*:?-{3,}")
# A Markdown-like table row in text (「| 部件 | 保修期 |」): it opens with a bar and holds another.
_TABLE_ROW = re.compile(r"^\s*\|[^\n]*\|")
CAPTION_MAX_CHARS = 80
"""A table's caption is the line (or last sentence) just before it, when at most this long."""


@dataclass
class ChunkDraft:
    """A chunk ready to embed and store: ``content`` is shown, ``enriched`` is embedded."""

    ordinal: int
    chunk_type: str  # "text" | "heading" | "table" | "faq"
    content: str
    enriched: str
    section_path: list[str]
    page_start: int | None
    page_end: int | None
    metadata: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ChunkingConfig:
    """Size limits in characters (not tokens: Chinese has no spaces to count words by)."""

    min_chars: int = 80
    max_chars: int = 800
    overlap_chars: int = 0
    table_max_chars: int = 800
    """A longer table is split by rows, each part with the header. At most what an answer is given of a chunk
    (``chat.prompts.MAX_CHUNK_CHARS``, 800): with 2,000, the rows past the 800th character of a table chunk were
    never shown to the answer (11 of the 29 table chunks of devdata/manual-zh)."""
    section_depth_in_enriched: int = 3

    def __post_init__(self) -> None:
        if self.max_chars <= 0 or self.table_max_chars <= 0:
            raise ValueError("max_chars and table_max_chars must be positive")
        if not 0 <= self.min_chars <= self.max_chars:
            raise ValueError("min_chars must be between 0 and max_chars")
        if not 0 <= self.overlap_chars < self.max_chars:
            raise ValueError("overlap_chars must be at least 0 and below max_chars")
        if self.section_depth_in_enriched < 0:
            raise ValueError("section_depth_in_enriched must not be negative")


def enriched_text(*, title: str, section_path: list[str], content: str,
                  depth: int = ChunkingConfig.section_depth_in_enriched, caption: str = "") -> str:
    """The text embedded for a chunk: the document's title, its topic (the first ``depth`` headings), the caption
    of the table it continues, the body."""
    lines = [title] if title else []
    if section_path and depth:
        lines.append("主题：" + " > ".join(section_path[:depth]))
    if caption:
        lines.append(f"表格：{caption}")
    lines.append(content)
    return "\n".join(lines)


def split_sentences(text: str) -> list[str]:
    """Split after 。！？；!?; (and closing quotes), after '. ', and at newlines; punctuation stays.

    Sentences are stripped and empty ones dropped; joining the raw pieces restores the input.
    """
    return [piece.strip() for piece in _raw_sentences(text) if piece.strip()]


def chunk_document(doc: ParsedDocument, config: ChunkingConfig = ChunkingConfig()) -> list[ChunkDraft]:
    """Turn a parsed document into ordered chunk drafts; never merges across sections."""
    return _Chunker(doc, config).run()


@dataclass
class _Piece:
    text: str
    page: int | None
    confidence: float | None = None
    table: tuple[str, str] | None = None
    """(caption, header row) when the piece is in a body row of a table in the text (``_mark_tables``)."""


def _run_meta(meta: dict) -> dict:
    """What decides whether text blocks may share a chunk: their meta less the per-paragraph OCR confidence."""
    return {key: value for key, value in meta.items() if key != "ocr_confidence"}


@dataclass
class _OpenHeading:
    block: Block
    level: int
    path: list[str]


class _Chunker:
    def __init__(self, doc: ParsedDocument, config: ChunkingConfig) -> None:
        self.doc = doc
        self.config = config
        self.drafts: list[ChunkDraft] = []
        self.stack: list[tuple[int, str]] = []
        self.run_blocks: list[Block] = []
        self.open_heading: _OpenHeading | None = None  # latest heading whose section has no body yet

    def run(self) -> list[ChunkDraft]:
        for block in self.doc.blocks:
            if not block.text.strip():
                continue
            if block.kind == "heading":
                self._heading(block)
                continue
            self.open_heading = None
            if block.kind == "text":
                if self.run_blocks and _run_meta(self.run_blocks[-1].meta) != _run_meta(block.meta):
                    self._flush_text()  # e.g. two JSONL records: keep each record's fields with its text
                self.run_blocks.append(block)
            elif block.kind == "table":
                before = self.run_blocks[-1].text if self.run_blocks else ""
                self._flush_text()
                self._table(block, before=before)
            elif block.kind == "faq":
                self._flush_text()
                self._faq(block)
            else:
                raise ValueError(f"unknown block kind {block.kind!r}")
        self._flush_text()
        if self.open_heading is not None:
            self._heading_chunk(self.open_heading)
        for ordinal, draft in enumerate(self.drafts):
            draft.ordinal = ordinal
        return self.drafts

    @property
    def path(self) -> list[str]:
        return [title for _, title in self.stack]

    # --- headings and sections ---

    def _heading(self, block: Block) -> None:
        self._flush_text()
        level = min(max(block.level, 1), 6)
        # A heading with no body and no subsection still deserves a chunk, or its title is unfindable.
        if self.open_heading is not None and level <= self.open_heading.level:
            self._heading_chunk(self.open_heading)
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        self.stack.append((level, " ".join(block.text.split())))
        self.open_heading = _OpenHeading(block=block, level=level, path=self.path)

    def _heading_chunk(self, heading: _OpenHeading) -> None:
        content = " ".join(heading.block.text.split())
        self._add("heading", content, self._enriched_text(content, heading.path), heading.path,
                  [heading.block.page], {**_run_meta(heading.block.meta), "level": heading.level})
        self.open_heading = None

    # --- text ---

    def _flush_text(self) -> None:
        if not self.run_blocks:
            return
        blocks, self.run_blocks = self.run_blocks, []
        path = self.path
        meta = _run_meta(blocks[0].meta)
        config = self.config
        # Leave room for the overlap so that it can be added without passing max_chars.
        budget = config.max_chars - config.overlap_chars
        chunks = _rebalance(_pack(_mark_tables(_pieces(blocks, config.max_chars)), budget), config.min_chars, budget)
        for index, chunk in enumerate(chunks):
            overlap = _overlap(chunks[index - 1], chunk, config) if index and config.overlap_chars else []
            content = _join(overlap + chunk)
            metadata = dict(meta)
            if overlap:
                metadata["overlap_chars"] = len(content) - len(_join(chunk))
            caption = ""
            table = (overlap + chunk)[0].table
            if table is not None:
                # The chunk opens inside a table begun in an earlier chunk: it gets the table's header row (so that
                # it reads, is indexed and is quoted as a table) and its caption (embedded and keyword-indexed).
                caption, header = table
                content = f"{header}\n{content}"
                metadata["table_header_chars"] = len(header) + 1
                if caption:
                    metadata["caption"] = caption
            confidences = [piece.confidence for piece in overlap + chunk if piece.confidence is not None]
            if confidences:  # OCR text: the least confident paragraph speaks for the chunk
                metadata["ocr_confidence"] = min(confidences)
            pages = [piece.page for piece in overlap + chunk]
            self._add("text", content, self._enriched_text(content, path, caption=caption), path, pages, metadata)

    # --- tables ---

    def _table(self, block: Block, *, before: str = "") -> None:
        header_lines, body_lines, columns = _table_lines(block)
        limit = self.config.table_max_chars
        if len(block.text.strip()) <= limit or not body_lines:
            parts = [body_lines]
        else:
            parts = []
            current: list[str] = []
            for line in body_lines:
                if current and len("\n".join(header_lines + current + [line])) > limit:
                    parts.append(current)
                    current = []
                current.append(line)
            parts.append(current)
        path = self.path
        caption = str(block.meta.get("caption") or block.meta.get("title") or "").strip() or caption_of(before)
        # Page of each body row, for a table that runs over a page break (the header row is first).
        row_pages = list(block.meta.get("row_pages") or [])[-len(body_lines):] if body_lines else []
        first_row = 0
        for number, part in enumerate(parts, start=1):
            content = "\n".join(header_lines + part) if len(parts) > 1 else block.text.strip()
            metadata = {**{k: v for k, v in block.meta.items() if k != "row_pages"},
                        "columns": list(columns), "row_count": len(part)}
            pages = [block.page, block.page_end]
            if len(parts) > 1 and len(row_pages) == len(body_lines):
                pages = row_pages[first_row:first_row + len(part)]
            first_row += len(part)
            if len(parts) > 1:
                metadata.update(part=number, parts=len(parts))
            if caption:
                metadata["caption"] = caption  # keyword-indexed with the chunk (documents.keyword_text)
            lines = []
            if path and self.config.section_depth_in_enriched:
                lines.append(f"主题：{self._topic(path)}")
            if caption:
                lines.append(f"表格：{caption}")
            if any(columns):
                lines.append("字段：" + "、".join(cell for cell in columns if cell))
            enriched = "\n".join(lines) + "\n\n" + content if lines else content
            self._add("table", content, enriched, path, pages, metadata)

    # --- FAQ ---

    def _faq(self, block: Block) -> None:
        question = str(block.meta.get("question", "")).strip()
        answer = str(block.meta.get("answer", "")).strip()
        content = block.text.strip()
        qa = f"问：{question}\n答：{answer}" if question or answer else content
        enriched = f"{self.doc.title}\n{qa}" if self.doc.title else qa
        metadata = {**block.meta, "question": question, "answer": answer}
        self._add("faq", content, enriched, self.path, [block.page], metadata)

    # --- shared ---

    def _topic(self, path: list[str]) -> str:
        return " > ".join(path[: self.config.section_depth_in_enriched])

    def _enriched_text(self, content: str, path: list[str], *, caption: str = "") -> str:
        return enriched_text(title=self.doc.title, section_path=path, content=content,
                             depth=self.config.section_depth_in_enriched, caption=caption)

    def _add(self, chunk_type: str, content: str, enriched: str, path: list[str],
             pages: list[int | None], metadata: dict) -> None:
        known = [page for page in pages if page is not None]
        self.drafts.append(
            ChunkDraft(
                ordinal=len(self.drafts),
                chunk_type=chunk_type,
                content=content,
                enriched=enriched,
                section_path=list(path),
                page_start=min(known) if known else None,
                page_end=max(known) if known else None,
                metadata=metadata,
            )
        )


def _raw_sentences(text: str) -> list[str]:
    """Lossless sentence pieces: ``"".join(result) == text``; whitespace-only tails join the piece before."""
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        pieces.append(text[start:match.end()])
        start = match.end()
    pieces.append(text[start:])
    merged: list[str] = []
    for piece in pieces:
        if merged and not piece.strip():
            merged[-1] += piece
        elif piece:
            merged.append(piece)
    return merged


def _hard_split(sentence: str, limit: int) -> list[str]:
    """Cut a sentence longer than ``limit``, preferring a comma or space in the second half of each window."""
    parts = []
    while len(sentence) > limit:
        window = sentence[:limit]
        cut = limit
        for match in _SOFT_BREAK.finditer(window):
            if match.end() >= limit // 2:
                cut = match.end()
        parts.append(sentence[:cut])
        sentence = sentence[cut:]
    if sentence:
        parts.append(sentence)
    return parts


def _pieces(blocks: list[Block], limit: int) -> list[_Piece]:
    """Sentences of consecutive text blocks, blocks separated by a newline, none longer than ``limit``."""
    pieces = []
    for index, block in enumerate(blocks):
        confidence = block.meta.get("ocr_confidence")
        block_pieces = []
        for position, sentence in enumerate(_raw_sentences(block.text.strip())):
            parts = _hard_split(sentence, limit)
            for part_index, part in enumerate(parts):
                if index and position == 0 and part_index == 0:
                    part = "\n" + part
                block_pieces.append(_Piece(part, block.page, confidence))
        if block_pieces and block.page_end is not None:
            block_pieces[-1].page = block.page_end  # a paragraph that runs over a page break ends on the next page
        pieces.extend(block_pieces)
    return pieces


def _join(pieces: list[_Piece]) -> str:
    return "".join(piece.text for piece in pieces).strip()


def _size(pieces: list[_Piece]) -> int:
    """The length of the chunk's content: its pieces, and the header row of a table it opens in."""
    return len(_join(pieces)) + _lead(pieces)


def _pack(pieces: list[_Piece], limit: int) -> list[list[_Piece]]:
    """Greedy: fill each chunk with whole sentences until the next one would pass ``limit``.

    A single sentence longer than ``limit`` (but within ``max_chars``) gets a chunk of its own.
    """
    chunks: list[list[_Piece]] = []
    current: list[_Piece] = []
    for piece in pieces:
        if current and _size(current + [piece]) > limit:
            chunks.append(current)
            current = []
        current.append(piece)
    if current:
        chunks.append(current)
    return chunks


def _rebalance(chunks: list[list[_Piece]], min_chars: int, limit: int) -> list[list[_Piece]]:
    """Grow chunks under ``min_chars`` with a neighbour's whole sentences, keeping every chunk within ``limit``.

    After greedy packing a short chunk cannot be merged whole into a neighbour without passing
    ``limit``, so it borrows the neighbour's closest sentences instead (the tail of the one
    before, or for the first chunk the head of the one after), in order and only while the
    neighbour stays at or above ``min_chars``.
    """
    for index, chunk in enumerate(chunks):
        if _size(chunk) >= min_chars:
            continue
        if index > 0:
            before = chunks[index - 1]
            while (
                _size(chunk) < min_chars
                and len(before) > 1
                and _size(before[:-1]) >= min_chars
                and _size(before[-1:] + chunk) <= limit
            ):
                chunk.insert(0, before.pop())
        elif index + 1 < len(chunks):
            after = chunks[index + 1]
            while (
                _size(chunk) < min_chars
                and len(after) > 1
                and _size(after[1:]) >= min_chars
                and _size(chunk + after[:1]) <= limit
            ):
                chunk.append(after.pop(0))
    return [chunk for chunk in chunks if chunk]


def _overlap(before: list[_Piece], chunk: list[_Piece], config: ChunkingConfig) -> list[_Piece]:
    """The longest tail of whole sentences of ``before`` within ``overlap_chars``.

    The tail also has to keep ``chunk`` within ``max_chars``.
    """
    taken: list[_Piece] = []
    for piece in reversed(before):
        candidate = [piece] + taken
        if _size(candidate) > config.overlap_chars or _size(candidate + chunk) > config.max_chars:
            break
        taken = candidate
    return taken


def caption_of(text: str) -> str:
    """The caption a table gets from the text just before it: that text's last line, or its last sentence,
    when it is short (「表 2 保修期限」「给出的建议包括但不限于如下的情况」); else ""."""
    lines = [line.strip() for line in text.strip().split("\n") if line.strip()]
    if not lines or _TABLE_ROW.match(lines[-1]):
        return ""
    last = lines[-1]
    if len(last) > CAPTION_MAX_CHARS:
        sentences = split_sentences(last)
        last = sentences[-1] if sentences else ""
    return last if len(last) <= CAPTION_MAX_CHARS else ""


def _mark_tables(pieces: list[_Piece]) -> list[_Piece]:
    """Mark the pieces of the body rows of each Markdown-like table in the text (rows 「| a | b |」, one a line)
    with the table's caption and header: a chunk that opens on such a piece gets them (``_Piece.table``).

    The header is the table's first row (with its 「| --- |」 rule when it has one); the caption is the line before
    the table (``caption_of``).
    """
    lines: list[tuple[str, list[_Piece]]] = []
    at_line_start = True
    for piece in pieces:
        if piece.text.startswith("\n"):
            at_line_start = True
        if at_line_start or not lines:
            lines.append(("", []))
        text, members = lines[-1]
        lines[-1] = (text + piece.text.strip("\n"), members + [piece])
        at_line_start = piece.text.endswith("\n")
    table: tuple[str, str] | None = None
    header_left = 0  # lines of the header still to pass
    for number, (text, members) in enumerate(lines):
        if not _TABLE_ROW.match(text):
            table = None
            continue
        if table is None:
            header = [text.strip()]
            if number + 1 < len(lines) and _TABLE_SEPARATOR.match(lines[number + 1][0].strip()):
                header.append(lines[number + 1][0].strip())
            table = (caption_of(lines[number - 1][0]) if number else "", "\n".join(header))
            header_left = len(header)
        if header_left:
            header_left -= 1
            continue
        for piece in members:
            piece.table = table
    return pieces


def _lead(chunk: list[_Piece]) -> int:
    """The characters a chunk's content gets before its pieces: the header row of the table it opens in."""
    return len(chunk[0].table[1]) + 1 if chunk and chunk[0].table else 0


def _table_lines(block: Block) -> tuple[list[str], list[str], tuple[str, ...]]:
    """``(header lines, body lines, header cells)`` of a table block's Markdown."""
    if block.rows:
        lines = markdown_table(block.rows).split("\n")
        return lines[:2], lines[2:], tuple(block.rows[0])
    lines = [line for line in block.text.strip().split("\n") if line.strip()]
    header_size = 2 if len(lines) > 1 and _TABLE_SEPARATOR.match(lines[1].strip()) else 1
    header = lines[:header_size]
    columns = tuple(cell.strip() for cell in header[0].strip().strip("|").split("|")) if header else ()
    return header, lines[header_size:], columns
