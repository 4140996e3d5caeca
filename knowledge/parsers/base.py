"""Format dispatch and byte sniffing: which parser reads a file, and bytes refused before any library sees them."""
from __future__ import annotations

import importlib
import io
import re
import zipfile
from collections.abc import Callable

from knowledge.parsers.decoding import bom_encoding, bomless_utf16
from knowledge.parsers.types import BOMB_CHECK_FLOOR, ParsedDocument, ParseError, ParseOptions

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
    # Converted by LibreOffice (knowledge.parsers.legacy) and read as DOCX, XLSX or PPTX.
    ".doc": "doc",
    ".wps": "wps",
    ".rtf": "rtf",
    ".odt": "odt",
    ".xls": "xls",
    ".et": "et",
    ".ods": "ods",
    ".ppt": "ppt",
    ".dps": "dps",
    ".odp": "odp",
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
    **{doc_type: ("legacy", "parse") for doc_type in ("doc", "wps", "rtf", "odt", "xls", "et", "ods", "ppt", "dps",
                                                      "odp")},
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
    "doc": "Word 97-2003 (DOC)",
    "wps": "WPS Writer (WPS)",
    "rtf": "Rich Text (RTF)",
    "odt": "OpenDocument text (ODT)",
    "xls": "Excel 97-2003 (XLS)",
    "et": "WPS Spreadsheets (ET)",
    "ods": "OpenDocument spreadsheet (ODS)",
    "ppt": "PowerPoint 97-2003 (PPT)",
    "dps": "WPS Presentation (DPS)",
    "odp": "OpenDocument presentation (ODP)",
}

_TEXT_TYPES = frozenset({"markdown", "text", "html", "csv", "eml", "jsonl"})
_ZIP_MEMBERS = {"docx": "word/document.xml", "xlsx": "xl/workbook.xml", "pptx": "ppt/presentation.xml",
                "odt": "content.xml", "ods": "content.xml", "odp": "content.xml"}
_ODF_MIMETYPES = {"odt": b"opendocument.text", "ods": b"opendocument.spreadsheet", "odp": b"opendocument.presentation"}
_OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
# OLE2 compound files (Word/Excel/PowerPoint 97 and WPS's twins share the magic): the stream that makes each kind,
# found by its UTF-16 name in the compound file's directory.
_OLE2_STREAMS = {"doc": ("WordDocument",), "wps": ("WordDocument",), "xls": ("Workbook", "Book"),
                 "et": ("Workbook", "Book"), "ppt": ("PowerPoint Document",), "dps": ("PowerPoint Document",)}
_OLE2_KINDS = (("WordDocument", "a Word document"), ("Workbook", "an Excel workbook"),
               ("PowerPoint Document", "a PowerPoint presentation"))
_IMAGE_MAGIC = {"png": b"\x89PNG\r\n\x1a\n", "jpeg": b"\xff\xd8\xff"}

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
    extra = {"doc_type": doc_type} if module_name == "legacy" else {}
    try:
        doc = parser(data, stem=stem or name, options=options, **extra)
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
        if doc_type in _ODF_MIMETYPES and _ODF_MIMETYPES[doc_type] not in data[:200]:
            raise ParseError("type_mismatch", f"the ZIP file has a {label} name but is not that OpenDocument type")
    elif doc_type in _OLE2_STREAMS:
        _check_ole2(data, doc_type)
    elif doc_type == "rtf":
        if data.lstrip()[:5] != b"{\\rtf":
            raise ParseError("type_mismatch", f"the file has a {label} name but does not start with {{\\rtf")
    elif doc_type in _IMAGE_MAGIC:
        if not data.startswith(_IMAGE_MAGIC[doc_type]):
            other = next((what for magic, what in _BINARY_MAGIC if data.startswith(magic)), "not such an image")
            raise ParseError("type_mismatch", f"the file has a {label} name but is {other}")
    elif doc_type in _TEXT_TYPES:
        if bom_encoding(data) is None:
            for magic, what in _BINARY_MAGIC:
                if data.startswith(magic):
                    raise ParseError("type_mismatch", f"the file has a {label} name but is {what}")
            if b"\x00" in data and bomless_utf16(data) is None:
                raise ParseError("type_mismatch", f"the file has a {label} name but contains binary data")


def _check_ole2(data: bytes, doc_type: str) -> None:
    """An OLE2 compound file holding the stream of the claimed kind (or none that says otherwise: LibreOffice
    then decides)."""
    label = _LABELS[doc_type]
    if not data.startswith(_OLE2_MAGIC):
        other = next((what for magic, what in _BINARY_MAGIC if data.startswith(magic)), "not an OLE2 compound file")
        raise ParseError("type_mismatch", f"the file has a {label} name but is {other}")
    if any(_entry(stream) in data for stream in _OLE2_STREAMS[doc_type]):
        return
    kind = next((what for stream, what in _OLE2_KINDS if _entry(stream) in data), None)
    if kind is not None:
        raise ParseError("type_mismatch", f"the file has a {label} name but is {kind}")


def _entry(stream: str) -> bytes:
    """A stream's name as an OLE2 directory entry holds it: UTF-16LE, NUL-terminated."""
    return stream.encode("utf-16-le") + b"\0\0"


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
    if unzipped > BOMB_CHECK_FLOOR and unzipped > options.max_zip_ratio * max(compressed, 1):
        raise ParseError(
            "archive_bomb",
            f"the {label} file unpacks {unzipped / max(compressed, 1):.0f}x its packed size,"
            f" over the limit of {options.max_zip_ratio}x",
        )
    if _ZIP_MEMBERS[doc_type] not in {info.filename for info in infos}:
        raise ParseError("type_mismatch", f"the ZIP file has a {label} name but has no {_ZIP_MEMBERS[doc_type]} part")
