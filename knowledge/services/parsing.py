"""Parsing uploaded files within their budgets: the settings, and the file handed to the bounded child.

Ingestion and preview both parse in a child process (``knowledge.parsers.worker``) with the budgets
of ``config/settings.py`` (ZHIKU_PARSE_* for ingestion, ZHIKU_PREVIEW_* for a preview's shorter
ones; docs/production.md, "Budgets for uploaded files"). The child reads the file from disk, so the
bytes are not copied into it, and only the parsed text comes back.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.conf import settings

from knowledge.parsers.worker import BoundedParse, Limits, parse_bounded


def parse_limits(*, preview: bool = False) -> Limits:
    """The budgets of an ingestion's parse, or of a preview's (which reads only the first pages, briefly)."""
    common = {
        "memory_mb": settings.ZHIKU_PARSE_MEMORY_MB, "cpu_seconds": settings.ZHIKU_PARSE_CPU_SECONDS,
        "max_inflated_mb": settings.ZHIKU_PARSE_MAX_INFLATED_MB, "max_unzipped_bytes": settings.ZHIKU_MAX_UNZIPPED_BYTES,
        "max_zip_ratio": settings.ZHIKU_MAX_UNZIP_RATIO,
    }
    if preview:
        return Limits(**common, wall_seconds=settings.ZHIKU_PREVIEW_SECONDS, max_chars=settings.ZHIKU_PREVIEW_MAX_CHARS,
                      max_pages=settings.ZHIKU_PREVIEW_MAX_PAGES, max_ocr_pages=settings.ZHIKU_PREVIEW_MAX_OCR_PAGES,
                      preview=True)
    return Limits(**common, wall_seconds=settings.ZHIKU_PARSE_SECONDS, max_chars=settings.ZHIKU_PARSE_MAX_CHARS,
                  max_pages=settings.ZHIKU_PARSE_MAX_PAGES, max_ocr_pages=settings.ZHIKU_PARSE_MAX_OCR_PAGES)


def parse_stored(file, name: str, *, on_page: Callable[[int, int], None] | None = None,
                 cancelled: Callable[[], bool] | None = None) -> BoundedParse:
    """Parse a stored upload (a ``FieldFile``) as ``name`` says, within the ingestion budgets (``ParseCancelled``
    once ``cancelled()``)."""
    with _on_disk(file) as path:
        return parse_bounded(name, path, parse_limits(), on_page=on_page, cancelled=cancelled)


def parse_bytes(name: str, data: bytes, *, cancelled: Callable[[], bool] | None = None) -> BoundedParse:
    """Parse bytes not stored anywhere (a preview), within the preview budgets."""
    with tempfile.TemporaryDirectory(prefix="zhiku-preview-") as folder:
        path = os.path.join(folder, "upload")
        with open(path, "wb") as out:
            out.write(data)
        return parse_bounded(name, path, parse_limits(preview=True), cancelled=cancelled)


@contextmanager
def _on_disk(file) -> Iterator[str]:
    """A path to the file's bytes: the storage's own, or a temporary copy for storages without paths."""
    try:
        path = file.path
    except (NotImplementedError, AttributeError):
        path = None
    if path is not None:
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="zhiku-parse-") as folder:
        copy = os.path.join(folder, "upload")
        with file.open("rb") as source, open(copy, "wb") as out:
            shutil.copyfileobj(source, out)
        yield copy
