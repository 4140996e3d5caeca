"""The audit log's error codes, registered in the one registry (core/errors.py) when the app loads."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import ErrorCode, ValidationFailed, register


class AuditError(ErrorCode):
    """The audit log's codes."""

    INVALID_AUDIT_FILTER = "invalid_audit_filter"
    INVALID_TIME_RANGE = "invalid_time_range"


register(AuditError.INVALID_AUDIT_FILTER, ValidationFailed, _("Invalid audit log filter: %(errors)s"))
register(AuditError.INVALID_TIME_RANGE, ValidationFailed, _("The start of the time range (since) must be before its end (until)."))
