"""Application errors: one class per failure, each with an HTTP status and a stable code."""
from __future__ import annotations


class ApplicationError(Exception):
    """Base error; the API turns it into ``{"error": {"code", "message"}}`` with ``status_code``."""

    status_code = 400
    default_code = "invalid"

    def __init__(self, message: str, *, code: str | None = None, extra: dict | None = None):
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.extra = extra or {}


class ValidationFailed(ApplicationError):
    status_code = 400
    default_code = "invalid"


class NotFound(ApplicationError):
    status_code = 404
    default_code = "not_found"


class PermissionDenied(ApplicationError):
    status_code = 403
    default_code = "permission_denied"


class Conflict(ApplicationError):
    status_code = 409
    default_code = "conflict"


class UnsupportedFileType(ApplicationError):
    status_code = 415
    default_code = "unsupported_type"


class FileTooLarge(ApplicationError):
    status_code = 413
    default_code = "file_too_large"


class EmbeddingError(ApplicationError):
    status_code = 400
    default_code = "embedding_error"


class BodyTooLarge(ApplicationError):
    status_code = 413
    default_code = "body_too_large"
