"""The S3 connector's error codes (sources/kinds/s3.py), in the one registry (core/errors.py).

Refused keys are ``source_auth_failed``, shared by the kinds (sources/kinds/service_errors.py).
"""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import ValidationFailed, register
from sources.kinds import service_errors  # noqa: F401 - registers source_auth_failed, shared by the kinds

register("s3_bucket_not_found", ValidationFailed, _("The bucket does not exist at this endpoint: %(detail)s"))
register("s3_access_denied", ValidationFailed,
         _("The bucket refused access: the keys are valid but may not list or read it: %(detail)s"))
register("s3_failed", ValidationFailed, _("The bucket could not be read: %(detail)s"))
register("s3_object_too_large", ValidationFailed,
         _("The object is larger than the source's per-file byte limit: %(detail)s"))
register("s3_object_unreadable", ValidationFailed, _("The object could not be read from the bucket: %(detail)s"))
