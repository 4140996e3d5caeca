"""Why a document failed, by its stable error code, in the reader's language.

Ingestion stores ``error_code`` and a technical ``error_message`` (English, written once, with the
specifics: a line number, a byte count). People read the sentence for the code, translated when
the page or API answer is rendered, so a failure reads in the viewer's language whatever language
the upload was made in; the stored message is kept as the ``detail``.
"""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

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
    "ingest_crashed": _("Processing stopped several times without finishing (the worker died or was killed); check the file, then retry."),
}


def ingest_error_message(code: str, detail: str = "") -> str:
    """The sentence for ``code`` in the active language; an unknown code falls back to the stored ``detail``."""
    message = MESSAGES.get(code)
    return str(message) if message is not None else (detail or code)
