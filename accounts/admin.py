"""API tokens in the admin: who holds which, until when, last used; revoke by deleting. Keys are never shown."""
from django.contrib import admin

from accounts.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("key_prefix", "user", "name", "created", "expiry", "last_used")
    list_filter = ("expiry",)
    search_fields = ("user__username", "name")
    fields = ("user", "name", "key_prefix", "created", "expiry", "last_used")
    readonly_fields = fields
    list_select_related = ("user",)

    def has_add_permission(self, request) -> bool:
        return False  # a key is issued to its owner (POST /api/auth/token/), never shown to anyone else

    def has_change_permission(self, request, obj=None) -> bool:
        return False
