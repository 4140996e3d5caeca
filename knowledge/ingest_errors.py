"""Why a document failed, by its stable error code, in the reader's language.

Ingestion stores ``error_code`` and a technical ``error_message`` (English, written once, with the
specifics: a line number, a byte count). People read the sentence for the code, translated when
the page or API answer is rendered, so a failure reads in the viewer's language whatever language
the upload was made in; the stored message is kept as the ``detail``.
"""
from __future__ import annotations

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from knowledge.parsers.budget import budget_of

MESSAGES = {
    "unsupported_type": _("This file type is not supported."),
    "empty_file": _("The file is empty or no text could be extracted from it."),
    "corrupt_file": _("The file is damaged or cannot be read."),
    "undecodable_text": _("The text encoding could not be recognised; save the file as UTF-8 and upload it again."),
    "archive_bomb": _("The file unpacks to far more data than allowed, so it was not read."),
    "type_mismatch": _("The file's content does not match its extension."),
    "ocr_failed": _("No text could be recognised on a scanned page or picture; upload a sharper scan or the original file."),
    "image_too_large": _("The picture is too large to read (over 40 megapixels); scale it down and upload it again."),
    "ingest_error": _("Processing failed because of an internal error; retry, and tell the administrator if it fails again."),
    "ingest_crashed": _("Processing stopped several times without finishing (the worker died or was killed); "
                        "check the file, then retry."),
    "resource_limit": _("Reading the file went over a limit set for one file, so it was stopped."),
    "converter_missing": _("Reading this file type needs LibreOffice, which is not installed on the server; ask the administrator, "
                           "or save the file as DOCX, XLSX or PPTX and upload it again."),
    "conversion_failed": _("LibreOffice could not open the file: it may be damaged, protected by a password, or not of the type "
                           "its extension says; save it as DOCX, XLSX or PPTX and upload it again."),
}

# resource_limit: which budget (knowledge.parsers.budget), with its limit as %(limit)s.
BUDGET_MESSAGES = {
    "memory": _("Reading the file needed more than %(limit)s MB of memory, the limit for one file, so it was stopped."),
    "cpu": _("Reading the file took more than %(limit)s seconds of processor time, the limit for one file, so it was stopped."),
    "time": _("Reading the file took longer than %(limit)s seconds, the limit for one file, so it was stopped."),
    "characters": _("The file holds more than %(limit)s characters of text, the limit for one file; split it into smaller files."),
    "pages": _("The file has more than %(limit)s pages, the limit for one file; split it into smaller files."),
    "ocr_pages": _("The file has more than %(limit)s scanned pages or pictures to recognise, the limit for one file; "
                   "split it, or upload a version with a text layer."),
    "inflated": _("The PDF's compressed content unpacks to more than %(limit)s MB, the limit for one file, so it was not read."),
}

# Why a preview shows only the start of a file (``ChunkPreview.cut_short``).
CUT_SHORT_MESSAGES = {
    "pages": _("The preview read only the first %(limit)s pages; the upload reads the whole file."),
    "ocr_pages": _("The preview recognised only the first %(limit)s scanned pages; the upload reads the whole file."),
    "time": _("The preview stopped after about %(limit)s seconds and shows the pages read by then; the upload reads the whole file."),
    "characters": _("The preview shows only the first %(limit)s characters; the upload reads the whole file."),
}


def ingest_error_message(code: str, detail: str = "") -> str:
    """The sentence for ``code`` in the active language; an unknown code falls back to the stored ``detail``.

    For ``resource_limit`` the sentence names the budget and its limit, read from the stored detail.
    """
    if code == "resource_limit" and (found := budget_of(detail)) is not None:
        budget, limit = found
        return str(BUDGET_MESSAGES[budget]) % {"limit": limit}
    message = MESSAGES.get(code)
    return str(message) if message is not None else (detail or code)


def cut_short_message(cut: dict | None) -> str:
    """Why a preview stopped reading, in the active language; "" when it read the whole file."""
    if not cut:
        return ""
    message = CUT_SHORT_MESSAGES.get(cut.get("budget", ""))
    if message is None:
        return gettext("The preview shows only the start of the file; the upload reads the whole file.")
    return str(message) % {"limit": cut.get("limit", "")}
