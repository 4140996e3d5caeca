"""Admin: conversations with their messages, and answer feedback (read-mostly, for review)."""
from django.contrib import admin

from chat.models import Conversation, Feedback, Message

MESSAGE_FIELDS = ("role", "content", "rewritten_query", "status", "hit", "not_found_by", "confidence", "answer_mode",
                  "created_at")


class MessageInline(admin.TabularInline):
    model = Message
    fields = MESSAGE_FIELDS
    readonly_fields = MESSAGE_FIELDS
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ["id", "title", "user", "kb_ids", "updated_at"]
    list_select_related = ["user"]
    search_fields = ["title", "user__username"]
    readonly_fields = ["user", "kb_ids", "created_at", "updated_at"]
    inlines = [MessageInline]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ["id", "conversation", "role", "status", "hit", "confidence", "answer_mode", "created_at"]
    list_filter = ["role", "status", "hit", "not_found_by", "answer_mode"]
    list_select_related = ["conversation"]
    readonly_fields = ["conversation", "role", "sources", "citations", "timings", "created_at"]


@admin.register(Feedback)
class FeedbackAdmin(admin.ModelAdmin):
    list_display = ["id", "message", "user", "rating", "reason", "updated_at"]
    list_filter = ["rating"]
    list_select_related = ["message", "user"]
    readonly_fields = ["message", "user", "created_at", "updated_at"]
