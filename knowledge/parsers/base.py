"""Value types, errors, byte sniffing and format dispatch shared by every file parser."""
from __future__ import annotations

import codecs
import importlib
import io
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field

import charset_normalizer

ERROR_CODES = frozenset(
    {"unsupported_type", "empty_file", "corrupt_file", "undecodable_text", "archive_bomb", "type_mismatch",
     "ocr_failed", "image_too_large", "resource_limit"}
)

SUPPORTED_EXTENSIONS: dict[str, str] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    ".html": "html",
    ".htm": "html",
    ".docx": "docx",
    ".pdf": "pdf",
    ".csv": "csv",
    ".xlsx": "xlsx",
    ".eml": "eml",
    ".jsonl": "jsonl",
    ".pptx": "pptx",
    ".png": "png",
    ".jpg": "jpeg",
    ".jpeg": "jpeg",
}

# doc_type -> (module in this package, function name)
_PARSERS: dict[str, tuple[str, str]] = {
    "markdown": ("markdown", "parse"),
    "text": ("text", "parse"),
    "html": ("html", "parse"),
    "docx": ("docx", "parse"),
    "pdf": ("pdf", "parse"),
    "csv": ("tabular", "parse_csv"),
    "xlsx": ("tabular", "parse_xlsx"),
    "eml": ("eml", "parse"),
    "jsonl": ("jsonl", "parse"),
    "pptx": ("pptx", "parse"),
    "png": ("image", "parse_png"),
    "jpeg": ("image", "parse_jpeg"),
}

_LABELS = {
    "markdown": "Markdown",
    "text": "text",
    "html": "HTML",
    "docx": "Word (DOCX)",
    "pdf": "PDF",
    "csv": "CSV",
    "xlsx": "Excel (XLSX)",
    "eml": "e-mail (EML)",
    "jsonl": "JSON Lines",
    "pptx": "PowerPoint (PPTX)",
    "png": "PNG image",
    "jpeg": "JPEG image",
}

_TEXT_TYPES = frozenset({"markdown", "text", "html", "csv", "eml", "jsonl"})
_ZIP_MEMBERS = {"docx": "word/document.xml", "xlsx": "xl/workbook.xml", "pptx": "ppt/presentation.xml"}
_IMAGE_MAGIC = {"png": b"\x89PNG\r\n\x1a\n", "jpeg": b"\xff\xd8\xff"}
_BOMB_CHECK_FLOOR = 10 * 1024 * 1024  # below this many unzipped bytes the ratio is not checked

# Signatures of binary formats that are sometimes renamed to a text extension.
_BINARY_MAGIC = (
    (b"%PDF-", "a PDF"),
    (b"PK\x03\x04", "a ZIP archive (e.g. DOCX/XLSX)"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "a legacy Office (DOC/XLS) file"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"RIFF", "a RIFF file (e.g. WebP)"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"\x7fELF", "an executable"),
    (b"MZ\x90\x00", "an executable"),
)

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),  # before UTF-16 LE: its BOM starts with the same two bytes
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


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
    max_zip_ratio: int = 100
    depth: int = 0
    # Called as ``on_page(done, total)`` while pages are recognised by OCR (the slow part of a scan).
    on_page: Callable[[int, int], None] | None = None
    max_chars: int = 5_000_000  # characters of text in the parsed blocks
    max_pages: int = 2000  # PDF pages, PowerPoint slides
    max_ocr_pages: int = 100  # scanned pages and pictures read by OCR
    max_inflated_bytes: int = 256 * 1024 * 1024  # bytes inflated from a PDF's compressed streams, all together
    preview: bool = False  # read only what the budgets allow and say where it stopped, instead of failing
    deadline: float | None = None  # time.monotonic() after which a preview starts no further page
    usage: Usage = field(default_factory=Usage, compare=False)


def parse_file(
    filename: str,
    data: bytes,
    *,
    max_unzipped_bytes: int = 200 * 1024 * 1024,
    max_zip_ratio: int = 100,
    on_page: Callable[[int, int], None] | None = None,
    options: ParseOptions | None = None,
) -> ParsedDocument:
    """Parse ``data`` as the type its ``filename`` extension claims, in this process.

    Raises ``ParseError`` (never a library exception) with one of ``ERROR_CODES``. ``on_page(done,
    total)`` reports progress through pages read by OCR; ``options``, when given, replaces the other
    keywords. Uploaded files are parsed in a child process with memory and time budgets
    (``knowledge.parsers.worker.parse_bounded``), which calls this.
    """
    if options is None:
        options = ParseOptions(max_unzipped_bytes=max_unzipped_bytes, max_zip_ratio=max_zip_ratio, on_page=on_page)
    return parse_nested(filename, data, options)


def parse_nested(filename: str, data: bytes, options: ParseOptions) -> ParsedDocument:
    """``parse_file`` with explicit options; used by container formats for their attachments."""
    name = re.split(r"[\\/]", filename)[-1]
    stem, ext = split_extension(name)
    doc_type = SUPPORTED_EXTENSIONS.get(ext)
    if doc_type is None:
        supported = ", ".join(sorted(SUPPORTED_EXTENSIONS))
        raise ParseError(
            "unsupported_type", f"files of type {ext or '(no extension)'!r} are not supported; use one of {supported}"
        )
    label = _LABELS[doc_type]
    if not data or not data.strip():
        raise ParseError("empty_file", f"the {label} file {name!r} is empty")
    _sniff(doc_type, data, options)
    module_name, func_name = _PARSERS[doc_type]
    parser: Callable[..., ParsedDocument] = getattr(
        importlib.import_module(f".{module_name}", __package__), func_name
    )
    try:
        doc = parser(data, stem=stem or name, options=options)
    except (ParseError, MemoryError):  # MemoryError: over the memory budget (knowledge.parsers.worker)
        raise
    except RecursionError as exc:
        raise ParseError("corrupt_file", f"the {label} file {name!r} is nested too deeply to read") from exc
    except Exception as exc:  # boundary: no library exception may escape (see module docstring)
        raise ParseError(
            "corrupt_file", f"the {label} file {name!r} could not be read; it may be damaged ({_describe(exc)})"
        ) from exc
    if not any(block.text.strip() for block in doc.blocks):
        raise ParseError("empty_file", f"the {label} file {name!r} contains no text")
    return doc


def split_extension(name: str) -> tuple[str, str]:
    """``"报告.V2.PDF"`` -> ``("报告.V2", ".pdf")``."""
    dot = name.rfind(".")
    if dot <= 0:
        return name, ""
    return name[:dot], name[dot:].lower()


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _sniff(doc_type: str, data: bytes, options: ParseOptions) -> None:
    """Reject bytes that are plainly not the claimed type, and ZIP bombs, before any library sees them."""
    label = _LABELS[doc_type]
    if doc_type == "pdf":
        if b"%PDF-" not in data[:1024]:
            raise ParseError("type_mismatch", "the file has a .pdf name but is not a PDF (no %PDF- header)")
    elif doc_type in _ZIP_MEMBERS:
        check_ooxml_zip(data, doc_type, options)
    elif doc_type in _IMAGE_MAGIC:
        if not data.startswith(_IMAGE_MAGIC[doc_type]):
            other = next((what for magic, what in _BINARY_MAGIC if data.startswith(magic)), "not such an image")
            raise ParseError("type_mismatch", f"the file has a {label} name but is {other}")
    elif doc_type in _TEXT_TYPES:
        if _bom_encoding(data) is None:
            for magic, what in _BINARY_MAGIC:
                if data.startswith(magic):
                    raise ParseError("type_mismatch", f"the file has a {label} name but is {what}")
            if b"\x00" in data and _bomless_utf16(data) is None:
                raise ParseError("type_mismatch", f"the file has a {label} name but contains binary data")


def check_ooxml_zip(data: bytes, doc_type: str, options: ParseOptions) -> None:
    """Check a DOCX/XLSX container: a ZIP, not a bomb, with the part that makes it that type."""
    label = _LABELS[doc_type]
    if not (data.startswith(b"PK\x03\x04") or data.startswith(b"PK\x05\x06")):
        raise ParseError("type_mismatch", f"the file has a {label} name but is not a ZIP-based Office file")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
        raise ParseError("corrupt_file", f"the {label} file is damaged: {_describe(exc)}") from exc
    unzipped = sum(info.file_size for info in infos)
    compressed = sum(info.compress_size for info in infos)
    if unzipped > options.max_unzipped_bytes:
        raise ParseError(
            "archive_bomb",
            f"the {label} file would unpack to {unzipped} bytes, over the limit of {options.max_unzipped_bytes}",
        )
    if unzipped > _BOMB_CHECK_FLOOR and unzipped > options.max_zip_ratio * max(compressed, 1):
        raise ParseError(
            "archive_bomb",
            f"the {label} file unpacks {unzipped / max(compressed, 1):.0f}x its packed size,"
            f" over the limit of {options.max_zip_ratio}x",
        )
    if _ZIP_MEMBERS[doc_type] not in {info.filename for info in infos}:
        raise ParseError("type_mismatch", f"the ZIP file has a {label} name but has no {_ZIP_MEMBERS[doc_type]} part")


# --- text decoding ---------------------------------------------------------------------------


def decode_text(data: bytes) -> tuple[str, str]:
    """Decode text bytes and return ``(text, encoding)`` with newlines normalised to ``\\n``.

    Tries, strictly and in order: a BOM, UTF-16 without BOM (only when the NUL pattern says so),
    UTF-8, GB18030 (a superset of GBK and GB2312) when the result reads as common Chinese, then
    charset-normalizer with a confidence floor (see ``_detected``). Detection is not tried first
    because it is unreliable on short Chinese text. A file that none of these decodes confidently
    raises ``ParseError("undecodable_text")`` rather than being stored as mojibake.
    """
    encoding = _bom_encoding(data) or _bomless_utf16(data)
    if encoding is not None:
        try:
            return _normalise_newlines(data.decode(encoding)), encoding
        except UnicodeDecodeError as exc:
            raise ParseError("undecodable_text", f"the text claims {encoding} but is not valid {encoding}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        if (repaired := _mostly_utf8(data)) is not None:
            return _normalise_newlines(repaired), "utf-8 (invalid bytes replaced)"
    else:
        if _looks_clean(text):
            return _normalise_newlines(text), "utf-8"
    try:
        text = data.decode("gb18030")
    except UnicodeDecodeError:
        pass
    else:
        # Almost any byte string decodes as GB18030 (Shift-JIS, Latin-1 ...); accept it only when it reads
        # as ordinary Chinese, i.e. nearly all its characters are GB2312 level-1 hanzi or CJK punctuation.
        if _looks_clean(text) and _common_chinese_share(text) >= _GB_COMMON_FLOOR:
            return _normalise_newlines(text), "gb18030"
    detected = _detected(data)
    if detected is not None:
        return _normalise_newlines(detected[0]), detected[1]
    raise ParseError("undecodable_text", "the text encoding could not be recognised confidently (it is not UTF-8"
                     " or GBK/GB18030, and detection was ambiguous); save the file as UTF-8 and retry")


# Share of non-ASCII characters that must be common Chinese for a BOM-less GB18030 reading to stand.
_GB_COMMON_FLOOR = 0.9
# charset-normalizer: the most "mess" (0..1) a reading may have, and the language coherence (0..1) an
# ambiguous reading needs (one whose rival encodings would decode the bytes to a different text).
_DETECT_MAX_CHAOS = 0.1
_DETECT_MIN_COHERENCE = 0.3


def _common_chinese_table() -> dict[int, None]:
    """A ``str.translate`` table deleting ASCII, GB2312 symbol rows (0xA1-0xA9) and level-1 hanzi (0xB0-0xD7)."""
    table: dict[int, None] = dict.fromkeys(range(128))
    for lead in (*range(0xA1, 0xAA), *range(0xB0, 0xD8)):
        for trail in range(0xA1, 0xFF):
            try:
                table[ord(bytes((lead, trail)).decode("gb2312"))] = None
            except UnicodeDecodeError:
                continue
    for char in "\u3000\ufeff\u00b7\u2014\u2026\u201c\u201d\u2018\u2019":
        table[ord(char)] = None
    return table


_COMMON_CHINESE: dict[int, None] | None = None


def _common_chinese_share(text: str, sample: int = 200_000) -> float:
    global _COMMON_CHINESE
    if _COMMON_CHINESE is None:
        _COMMON_CHINESE = _common_chinese_table()
    head = text[:sample]
    non_ascii = len(head) - len(head.encode("ascii", "ignore"))
    if not non_ascii:
        return 1.0
    uncommon = len(head.translate(_COMMON_CHINESE))
    return 1.0 - uncommon / non_ascii


def _detected(data: bytes) -> tuple[str, str] | None:
    """charset-normalizer's reading when it is confident, else None.

    Confident means: little mess (chaos), a clean text, and either no rival encoding that reads the
    bytes differently (e.g. Shift-JIS Japanese, which only cp932 decodes without mess) or a
    recognised language (coherence) — short accented Latin-1 text, which cp1250/cp1252/cp1257 all
    decode "cleanly" but differently, fails here rather than being stored misread.
    """
    matches = charset_normalizer.from_bytes(data)
    best = matches.best()
    if best is None or not best.encoding or best.chaos > _DETECT_MAX_CHAOS:
        return None
    text = str(best)
    if not _looks_clean(text):
        return None
    rivals = [m for m in matches if m is not best and m.chaos <= _DETECT_MAX_CHAOS and str(m) != text]
    if rivals and best.coherence < _DETECT_MIN_COHERENCE:
        return None
    return text, best.encoding


def _bom_encoding(data: bytes) -> str | None:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding
    return None


def _bomless_utf16(data: bytes) -> str | None:
    """Recognise BOM-less UTF-16 by NULs falling only on odd (LE) or only on even (BE) offsets."""
    if len(data) < 4 or len(data) % 2 or b"\x00" not in data:
        return None
    even_nuls = data[0::2].count(0)
    odd_nuls = data[1::2].count(0)
    half = len(data) // 2
    if odd_nuls and not even_nuls and odd_nuls >= half // 4:
        return "utf-16-le"
    if even_nuls and not odd_nuls and even_nuls >= half // 4:
        return "utf-16-be"
    return None


# C0/C1 controls other than whitespace and ESC, and private-use code points: wrong guesses produce them.
_UNCLEAN = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f-\x9f\ue000-\uf8ff\U000f0000-\U0010ffff]")


def _looks_clean(text: str) -> bool:
    return _UNCLEAN.search(text) is None


def _mostly_utf8(data: bytes) -> str | None:
    """UTF-8 with a few bad bytes (a truncated upload, one stray byte) rather than another encoding."""
    text = data.decode("utf-8", "replace")
    bad = text.count("\ufffd") - data.count("\ufffd".encode())
    multibyte = len(data.translate(None, bytes(range(128))))  # bytes left once ASCII is deleted
    if 0 < bad * 200 <= multibyte:
        return text
    return None


def _normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


# --- shared rendering ------------------------------------------------------------------------


def markdown_table(rows: tuple[tuple[str, ...], ...] | list[list[str]] | list[tuple[str, ...]]) -> str:
    """Render rows (the first is the header) as a GitHub-flavoured Markdown table."""
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    lines = []
    for index, row in enumerate(rows):
        cells = [_table_cell(cell) for cell in row] + [""] * (width - len(row))
        lines.append("| " + " | ".join(cells) + " |")
        if index == 0:
            lines.append("|" + "|".join([" --- "] * width) + "|")
    return "\n".join(lines)


def _table_cell(value: str) -> str:
    return re.sub(r"\s*\n\s*", " ", value.strip()).replace("|", "\\|")


def clean_rows(rows: list[list[str]]) -> tuple[tuple[str, ...], ...]:
    """Strip cells, drop rows and trailing columns that are empty everywhere, pad rows to one width."""
    stripped = [[(cell or "").strip() for cell in row] for row in rows]
    stripped = [row for row in stripped if any(row)]
    if not stripped:
        return ()
    width = max((max((i + 1 for i, cell in enumerate(row) if cell), default=0) for row in stripped), default=0)
    return tuple(tuple(row[:width] + [""] * (width - len(row[:width]))) for row in stripped)


def table_block(rows: list[list[str]], *, page: int | None = None, meta: dict | None = None) -> Block | None:
    """A table block from raw cell rows, or ``None`` when no cell has text."""
    cleaned = clean_rows(rows)
    if not cleaned:
        return None
    return Block(kind="table", text=markdown_table(cleaned), page=page, rows=cleaned, meta=dict(meta or {}))


def faq_block(question: str, answer: str, *, meta: dict | None = None) -> Block:
    """A question–answer block rendered as ``问：…\\n答：…``."""
    question, answer = question.strip(), answer.strip()
    return Block(
        kind="faq",
        text=f"问：{question}\n答：{answer}",
        meta={**(meta or {}), "question": question, "answer": answer},
    )


def is_cjk(char: str) -> bool:
    """True for Han ideographs, kana, hangul and CJK/full-width punctuation."""
    code = ord(char)
    return (
        0x2E80 <= code <= 0x9FFF
        or 0xAC00 <= code <= 0xD7AF
        or 0xF900 <= code <= 0xFAFF
        or 0xFE30 <= code <= 0xFE4F
        or 0xFF00 <= code <= 0xFFEF
        or 0x20000 <= code <= 0x3134F
    )
