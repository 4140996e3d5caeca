"""API tokens, single sign-on links, group managers, invitations and preferences in the admin; keys and links are never
shown."""
from django.contrib import admin

from accounts.models import ApiToken, GroupManager, Invitation, Preference, SsoIdentity


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


@admin.register(GroupManager)
class GroupManagerAdmin(admin.ModelAdmin):
    """Who manages which group (also set on the console's group pages, /people/groups/)."""

    list_display = ("group", "user", "created")
    search_fields = ("group__name", "user__username")
    autocomplete_fields = ("user",)
    list_select_related = ("group", "user")


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    """Invitations, read only: the link exists only as its SHA-256, so it cannot be shown; withdraw on /people/invitations/."""

    list_display = ("id", "email", "created_by", "created", "expires_at", "accepted_by", "accepted_at", "revoked_at")
    fields = ("email", "note", "created_by", "created", "expires_at", "accepted_by", "accepted_at", "revoked_at")
    readonly_fields = fields
    list_select_related = ("created_by", "accepted_by")

    def has_add_permission(self, request) -> bool:
        return False  # made on /people/invitations/ or POST /api/people/invitations/, where the link is shown once

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Preference)
class PreferenceAdmin(admin.ModelAdmin):
    """What each person chose on the console (the chat page's KBs), read only: it is theirs to change, on the page or
    with PUT /api/account/preferences/."""

    list_display = ("user", "chat_kb_ids", "updated_at")
    search_fields = ("user__username",)
    fields = list_display
    readonly_fields = fields
    list_select_related = ("user",)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
