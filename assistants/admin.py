"""Assistants and their keys in the Django admin (keys listed by prefix; the key itself is never stored)."""
from django.contrib import admin

from assistants.models import ApiKey, Assistant, AssistantKB


class AssistantKBInline(admin.TabularInline):
    model = AssistantKB
    extra = 0
    raw_id_fields = ["kb"]


@admin.register(Assistant)
class AssistantAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "share_access", "updated_at"]
    search_fields = ["name", "owner__username"]
    list_filter = ["share_access"]
    raw_id_fields = ["owner"]
    readonly_fields = ["share_token", "created_at", "updated_at"]
    inlines = [AssistantKBInline]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["prefix", "kind", "assistant", "kb", "created_by", "last_used_at", "revoked_at"]
    list_filter = ["kind"]
    search_fields = ["prefix", "name", "assistant__name", "kb__name"]
    readonly_fields = ["kind", "assistant", "kb", "created_by", "prefix", "digest", "created_at", "last_used_at"]
    exclude = []

    def has_add_permission(self, request):
        return False  # a key is issued where it can be shown once: the console, the API, manage.py
