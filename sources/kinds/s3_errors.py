"""The S3 connector's error codes (sources/kinds/s3.py), in the one registry (core/errors.py).

Refused keys are ``source_auth_failed``, shared by the kinds (sources/kinds/service_errors.py).
"""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import ErrorCode, ValidationFailed, register
from sources.kinds import service_errors  # noqa: F401 - registers source_auth_failed, shared by the kinds


class S3Error(ErrorCode):
    """The S3 connector's codes."""

    S3_BUCKET_NOT_FOUND = "s3_bucket_not_found"
    S3_ACCESS_DENIED = "s3_access_denied"
    S3_FAILED = "s3_failed"
    S3_OBJECT_TOO_LARGE = "s3_object_too_large"
    S3_OBJECT_UNREADABLE = "s3_object_unreadable"


register(S3Error.S3_BUCKET_NOT_FOUND, ValidationFailed, _("The bucket does not exist at this endpoint: %(detail)s"))
register(S3Error.S3_ACCESS_DENIED, ValidationFailed,
         _("The bucket refused access: the keys are valid but may not list or read it: %(detail)s"))
register(S3Error.S3_FAILED, ValidationFailed, _("The bucket could not be read: %(detail)s"))
register(S3Error.S3_OBJECT_TOO_LARGE, ValidationFailed,
         _("The object is larger than the source's per-file byte limit: %(detail)s"))
register(S3Error.S3_OBJECT_UNREADABLE, ValidationFailed, _("The object could not be read from the bucket: %(detail)s"))
