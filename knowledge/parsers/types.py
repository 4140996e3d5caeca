"""What every parser returns or raises: blocks, the parsed document, its usage, the options, ParseError and its codes."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

ERROR_CODES = frozenset(
    {"unsupported_type", "empty_file", "corrupt_file", "undecodable_text", "archive_bomb", "type_mismatch",
     "ocr_failed", "image_too_large", "resource_limit", "converter_missing", "conversion_failed"}
)
# Below this many unpacked bytes the ratio of a ZIP or a PDF stream (``ParseOptions.max_zip_ratio``) is not checked.
BOMB_CHECK_FLOOR = 10 * 1024 * 1024


@dataclass(frozen=True)
class Block:
    """One structural piece of a document, in reading order."""

    kind: str  # "heading" | "text" | "table" | "faq"
    text: str
    level: int = 0
    page: int | None = None
    rows: tuple[tuple[str, ...], ...] | None = None
    meta: dict = field(default_factory=dict)
    page_end: int | None = None  # the last page, for a paragraph or table that runs over a page break


@dataclass
class ParsedDocument:
    """A file turned into a title, a type, ordered blocks and file-level metadata."""

    title: str
    doc_type: str
    blocks: list[Block]
    metadata: dict


class ParseError(Exception):
    """A file could not be parsed; ``code`` is stable, ``message`` is for people."""

    def __init__(self, code: str, message: str) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown parse error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"ParseError({self.code!r}, {self.message!r})"


@dataclass
class Usage:
    """What one parse has used so far, shared by its nested (attachment) parses."""

    ocr_pages: int = 0
    # A preview that stopped at a budget: {"budget": name, "limit": n, ...what was read}; None when read whole.
    cut_short: dict | None = None


@dataclass(frozen=True)
class ParseOptions:
    """Limits handed down to every parser, including nested (attachment) parses.

    The ``max_*`` budgets are checked where the parsers read (``knowledge.parsers.budget``); an
    ingestion over one fails with ``resource_limit``, a ``preview`` stops reading there instead.
    """

    max_unzipped_bytes: int = 200 * 1024 * 1024
    max_zip_ratio: int = 100  # a ZIP, or one of a PDF's compressed streams, unpacks to at most this times its size
    depth: int = 0
    # Called as ``on_page(done, total)`` while pages are recognised by OCR (the slow part of a scan).
    on_page: Callable[[int, int], None] | None = None
    max_chars: int = 5_000_000  # characters of text in the parsed blocks
    max_pages: int = 2000  # PDF pages, PowerPoint slides
    max_ocr_pages: int = 100  # scanned pages and pictures read by OCR
    max_inflated_bytes: int = 256 * 1024 * 1024  # bytes inflated from a PDF's compressed streams, all together
    preview: bool = False  # read only what the budgets allow and say where it stopped, instead of failing
    deadline: float | None = None  # time.monotonic() after which a preview starts no further page
    wall_deadline: float | None = None  # time.monotonic() at which the parse's wall-clock budget ends
    max_pictures: int = 50  # pictures inside a DOCX/PPTX read by OCR (they also count against max_ocr_pages)
    usage: Usage = field(default_factory=Usage, compare=False)
