"""A section's sentences as pieces, packed into chunks of the configured size, rebalanced and overlapped; table
rows in the text keep their caption and header."""
from __future__ import annotations

import re
from dataclasses import dataclass

from knowledge.chunking.drafts import ChunkingConfig
from knowledge.chunking.sentences import hard_split, raw_sentences, split_sentences
from knowledge.parsers.types import Block

TABLE_SEPARATOR = re.compile(r"^\|?\s*:?-{3,}")
# A Markdown-like table row in text (「| 部件 | 保修期 |」): it opens with a bar and holds another.
_TABLE_ROW = re.compile(r"^\s*\|[^\n]*\|")
CAPTION_MAX_CHARS = 80


@dataclass
class Piece:
    text: str
    page: int | None
    confidence: float | None = None
    table: tuple[str, str] | None = None
    """(caption, header row) when the piece is in a body row of a table in the text (``mark_tables``)."""


def to_pieces(blocks: list[Block], limit: int) -> list[Piece]:
    """Sentences of consecutive text blocks, blocks separated by a newline, none longer than ``limit``."""
    pieces = []
    for index, block in enumerate(blocks):
        confidence = block.meta.get("ocr_confidence")
        block_pieces = []
        for position, sentence in enumerate(raw_sentences(block.text.strip())):
            parts = hard_split(sentence, limit)
            for part_index, part in enumerate(parts):
                if index and position == 0 and part_index == 0:
                    part = "\n" + part
                block_pieces.append(Piece(part, block.page, confidence))
        if block_pieces and block.page_end is not None:
            block_pieces[-1].page = block.page_end  # a paragraph that runs over a page break ends on the next page
        pieces.extend(block_pieces)
    return pieces


def join_pieces(pieces: list[Piece]) -> str:
    return "".join(piece.text for piece in pieces).strip()


def size_of(pieces: list[Piece]) -> int:
    """The length of the chunk's content: its pieces, and the header row of a table it opens in."""
    return len(join_pieces(pieces)) + lead_of(pieces)


def pack(pieces: list[Piece], limit: int) -> list[list[Piece]]:
    """Greedy: fill each chunk with whole sentences until the next one would pass ``limit``.

    A single sentence longer than ``limit`` (but within ``max_chars``) gets a chunk of its own.
    """
    chunks: list[list[Piece]] = []
    current: list[Piece] = []
    for piece in pieces:
        if current and size_of(current + [piece]) > limit:
            chunks.append(current)
            current = []
        current.append(piece)
    if current:
        chunks.append(current)
    return chunks


def rebalance(chunks: list[list[Piece]], min_chars: int, limit: int) -> list[list[Piece]]:
    """Grow chunks under ``min_chars`` with a neighbour's whole sentences, keeping every chunk within ``limit``.

    After greedy packing a short chunk cannot be merged whole into a neighbour without passing
    ``limit``, so it borrows the neighbour's closest sentences instead (the tail of the one
    before, or for the first chunk the head of the one after), in order and only while the
    neighbour stays at or above ``min_chars``.
    """
    for index, chunk in enumerate(chunks):
        if size_of(chunk) >= min_chars:
            continue
        if index > 0:
            before = chunks[index - 1]
            while (
                size_of(chunk) < min_chars
                and len(before) > 1
                and size_of(before[:-1]) >= min_chars
                and size_of(before[-1:] + chunk) <= limit
            ):
                chunk.insert(0, before.pop())
        elif index + 1 < len(chunks):
            after = chunks[index + 1]
            while (
                size_of(chunk) < min_chars
                and len(after) > 1
                and size_of(after[1:]) >= min_chars
                and size_of(chunk + after[:1]) <= limit
            ):
                chunk.append(after.pop(0))
    return [chunk for chunk in chunks if chunk]


def overlap_before(before: list[Piece], chunk: list[Piece], config: ChunkingConfig) -> list[Piece]:
    """The longest tail of whole sentences of ``before`` within ``overlap_chars``.

    The tail also has to keep ``chunk`` within ``max_chars``.
    """
    taken: list[Piece] = []
    for piece in reversed(before):
        candidate = [piece] + taken
        if size_of(candidate) > config.overlap_chars or size_of(candidate + chunk) > config.max_chars:
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


def mark_tables(pieces: list[Piece]) -> list[Piece]:
    """Mark the pieces of the body rows of each Markdown-like table in the text (rows 「| a | b |」, one a line)
    with the table's caption and header: a chunk that opens on such a piece gets them (``Piece.table``).

    The header is the table's first row (with its 「| --- |」 rule when it has one); the caption is the line before
    the table (``caption_of``).
    """
    lines: list[tuple[str, list[Piece]]] = []
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
            if number + 1 < len(lines) and TABLE_SEPARATOR.match(lines[number + 1][0].strip()):
                header.append(lines[number + 1][0].strip())
            table = (caption_of(lines[number - 1][0]) if number else "", "\n".join(header))
            header_left = len(header)
        if header_left:
            header_left -= 1
            continue
        for piece in members:
            piece.table = table
    return pieces


def lead_of(chunk: list[Piece]) -> int:
    """The characters a chunk's content gets before its pieces: the header row of the table it opens in."""
    return len(chunk[0].table[1]) + 1 if chunk and chunk[0].table else 0
