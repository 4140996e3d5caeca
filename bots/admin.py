"""Chat-bot channels and their events in the Django admin: read-only, since a change goes through bots/services.py
(which encrypts the credentials and writes the audit entry: the console, the API, manage.py); a removal from the
admin goes through the same service, so it is audited too."""
from django.contrib import admin

from bots.models import BotChannel, BotEvent
from bots.services import channel_delete


@admin.register(BotChannel)
class BotChannelAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "assistant", "enabled", "updated_at"]
    list_filter = ["kind", "enabled"]
    search_fields = ["name", "assistant__name"]
    raw_id_fields = ["assistant"]
    readonly_fields = ["kind", "assistant", "callback_id", "credential_names", "settings", "created_at", "updated_at"]
    fields = ["name", "kind", "assistant", "enabled", "settings", "credential_names", "callback_id", "created_at",
              "updated_at"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def delete_model(self, request, obj):
        channel_delete(channel=obj)

    def delete_queryset(self, request, queryset):
        for channel in queryset:
            channel_delete(channel=channel)


@admin.register(BotEvent)
class BotEventAdmin(admin.ModelAdmin):
    list_display = ["id", "channel", "status", "question", "created_at", "answered_at"]
    list_filter = ["status", "channel__kind"]
    search_fields = ["event_id", "question"]
    readonly_fields = ["channel", "event_id", "question", "chat", "status", "error", "message", "created_at", "answered_at"]
    exclude = ["reply_to"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
