"""Admin: sources and their runs, read-only (sources are added and edited in the console or the API, through
sources/services; credentials are never shown here)."""
from django.contrib import admin

from sources.models import Source, SourceItem, SourceRun


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Source)
class SourceAdmin(ReadOnlyAdmin):
    list_display = ["name", "kind", "kb", "schedule", "paused", "next_run_at"]
    list_filter = ["kind", "schedule", "paused"]
    search_fields = ["name"]
    exclude = ["credentials"]


@admin.register(SourceRun)
class SourceRunAdmin(ReadOnlyAdmin):
    list_display = ["id", "source", "status", "trigger", "started_at", "finished_at", "added", "updated", "unchanged",
                    "removed", "failed"]
    list_filter = ["status", "trigger"]


@admin.register(SourceItem)
class SourceItemAdmin(ReadOnlyAdmin):
    list_display = ["name", "source", "key", "revision", "document"]
    search_fields = ["name", "key"]
