"""A connector's ``SourceError`` as the application error its registered code names (sources/errors.py)."""
from __future__ import annotations

from core.errors import CODES, ApplicationError, ValidationFailed
from sources.kinds.base import SourceError


def source_error_text(code: str, detail: str) -> str:
    """The registered message of ``code`` in the active language, with the connector's ``detail`` in it."""
    entry = CODES.get(code)
    if entry is None:
        return detail
    try:
        return entry.text(detail=detail)
    except (KeyError, TypeError, ValueError):  # a kind's template that names other values
        return detail


def as_application_error(exc: SourceError) -> ApplicationError:
    entry = CODES.get(exc.code)
    error = entry.error if entry is not None and entry.error is not None else ValidationFailed
    return error(source_error_text(exc.code, exc.message), code=exc.code if entry is not None else "source_failed",
                 extra={"detail": exc.message})
