"""The audit log's filters, read from a query string the same way for the API, the page and the CSV export."""
from __future__ import annotations

from rest_framework import serializers

from audit.errors import AuditError
from audit.selectors import ACTION_FILTERS, AuditFilters
from core.api.fields import Text
from core.errors import fail


class AuditFilterInput(serializers.Serializer):
    """Query parameters of the audit log (unknown parameters, like ``page``, are ignored)."""

    kb = serializers.IntegerField(required=False, min_value=1, max_value=2**63 - 1,
                                  help_text="Only entries of this knowledge base id (also of a deleted one)")
    actor = Text(required=False, max_length=150, trim_whitespace=False, help_text="Only entries by this username (as it was then)")
    action = serializers.ChoiceField(required=False, choices=[(a, a) for a in ACTION_FILTERS],
                                     help_text="One action (document.delete) or every action of an object (document)")
    since = serializers.DateTimeField(required=False, help_text="Entries at or after this time (ISO 8601)")
    until = serializers.DateTimeField(required=False, help_text="Entries before this time (ISO 8601); after since")


def filters_from(params, *, blank_is_absent: bool = True) -> AuditFilters:
    """The filters of ``params`` (a QueryDict or dict); 400 ``invalid_audit_filter`` / ``invalid_time_range``.

    ``blank_is_absent``: an empty value means no filter (the page's form sends every field); the API's schema
    gives each parameter a format, so there an empty one is refused like any other value outside it."""
    raw = {k: v for k, v in (params.dict() if hasattr(params, "dict") else dict(params)).items()
           if v != "" or not blank_is_absent}
    checked = AuditFilterInput(data=raw)
    if not checked.is_valid():
        raise fail(AuditError.INVALID_AUDIT_FILTER, errors="; ".join(f"{k}: {v[0]}" for k, v in checked.errors.items()),
                   extra={"fields": checked.errors})
    data = checked.validated_data
    if "since" in data and "until" in data and data["since"] >= data["until"]:
        raise fail(AuditError.INVALID_TIME_RANGE, on_field="until")
    return AuditFilters(kb=data.get("kb"), actor=data.get("actor"), action=data.get("action"),
                        since=data.get("since"), until=data.get("until"))
