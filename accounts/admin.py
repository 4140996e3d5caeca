"""API tokens and single sign-on links in the admin: who holds which, until when, last used; revoke by deleting. Keys are never shown."""
from django.contrib import admin

from accounts.models import ApiToken, SsoIdentity


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


@admin.register(SsoIdentity)
class SsoIdentityAdmin(admin.ModelAdmin):
    """Which account each directory or provider identity signs in to; deleting a link makes the next sign-in refused
    (or, with ZHIKU_*_LINK_EXISTING, linked again)."""

    list_display = ("user", "source", "subject", "issuer", "created", "last_login")
    list_filter = ("source",)
    search_fields = ("user__username", "subject")
    fields = list_display
    readonly_fields = fields
    list_select_related = ("user",)

    def has_add_permission(self, request) -> bool:
        return False  # made by a sign-in, never by hand

    def has_change_permission(self, request, obj=None) -> bool:
        return False
