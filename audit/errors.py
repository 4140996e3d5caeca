"""The audit log's error codes, registered in the one registry (core/errors.py) when the app loads."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import ValidationFailed, register

register("invalid_audit_filter", ValidationFailed, _("Invalid audit log filter: %(errors)s"))
register("invalid_time_range", ValidationFailed, _("The start of the time range (since) must be before its end (until)."))
