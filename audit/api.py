"""``GET /api/audit/``: the audit entries the caller may read (staff: all; owners: their KBs'), filtered and paged."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers

from audit.inputs import AuditFilterInput, filters_from
from audit.models import AuditEntry
from audit.selectors import entries_filtered, entries_visible
from core.api.pagination import PaginatedView


class AuditEntryOutput(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor_name", help_text="The username when the entry was written; blank: none")
    actor_id = serializers.IntegerField(allow_null=True, help_text="The account's id; null once it is deleted (or none)")
    kb = serializers.IntegerField(source="kb_id", allow_null=True, help_text="The KB's id (kept after the KB is deleted)")
    changes = serializers.JSONField(help_text='{"field": [before, after]} for settings, or facts of the action; '
                                              "secrets are masked as ***")

    class Meta:
        model = AuditEntry
        fields = ["id", "at", "actor", "actor_id", "origin", "action", "object_type", "object_id", "object_repr", "kb",
                  "kb_name", "address", "changes"]


class AuditListView(PaginatedView):
    @extend_schema(responses={200: AuditEntryOutput(many=True)}, parameters=[AuditFilterInput],
                   summary=_("Audit log entries, newest first (staff: all; a KB's owners: that KB's)"))
    def get(self, request):
        filters = filters_from(request.query_params, blank_is_absent=False)
        qs = entries_filtered(entries_visible(user=request.user), filters)
        return self.paginated(qs, AuditEntryOutput)
