"""Admin of chunks (content and the on/off switch, saved through chunk_update) and read-only keyword indexes."""
from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin import RelatedOnlyFieldListFilter
from django.utils.text import Truncator
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from knowledge.access import documents_readable_q, kbs_for_user
from knowledge.admin.access import RoleAccessMixin
from knowledge.models import BM25Index, Chunk
from knowledge.services.chunks import chunk_update, chunks_set_enabled


@admin.register(Chunk)
class ChunkAdmin(RoleAccessMixin, admin.ModelAdmin):
    """Content and the on/off switch are editable; saving re-embeds through ``chunk_update``."""

    list_display = ("document", "ordinal", "chunk_type", "enabled", "short_content")
    list_select_related = ("document",)
    list_filter = (("kb", RelatedOnlyFieldListFilter), "chunk_type", "enabled", ("document", RelatedOnlyFieldListFilter))
    search_fields = ("content",)
    actions = ["enable_chunks", "disable_chunks"]
    fields = (
        "document", "kb", "ordinal", "chunk_type", "section_path", "page_start", "page_end", "content", "enabled",
        "tokens", "enriched", "metadata", "created_at", "updated_at",
    )
    readonly_fields = tuple(f for f in fields if f not in ("content", "enabled"))

    def get_queryset(self, request):
        return super().get_queryset(request).filter(documents_readable_q(user=request.user, prefix="document__"))

    def has_add_permission(self, request):
        return False  # chunks come from ingestion

    def has_delete_permission(self, request, obj=None):
        return False  # disable a chunk instead; deleting would not be re-created on re-index anyway

    @admin.display(description=_("content"))
    def short_content(self, obj: Chunk) -> str:
        return Truncator(obj.content).chars(80)

    def save_model(self, request, obj, form, change):
        updates = {f: form.cleaned_data[f] for f in ("content", "enabled") if f in form.changed_data}
        if updates:
            # A fresh copy: the form already wrote the new text onto ``obj``, and
            # chunk_update re-embeds only when the text differs from the stored one.
            chunk_update(chunk=Chunk.objects.select_related("kb").get(pk=obj.pk), **updates)
        obj.refresh_from_db()

    def _switch(self, request, queryset, enabled: bool) -> None:
        allowed = [c for c in queryset.select_related("kb") if self.has_change_permission(request, c)]
        changed = chunks_set_enabled(chunks=allowed, enabled=enabled)
        self.message_user(request, f"{gettext('Enabled') if enabled else gettext('Disabled')}: {changed}", messages.SUCCESS)
        if len(allowed) < queryset.count():
            self.message_user(request, gettext("Some chunks need the editor role"), messages.WARNING)

    @admin.action(description=_("Enable"), permissions=["change"])
    def enable_chunks(self, request, queryset):
        self._switch(request, queryset, True)

    @admin.action(description=_("Disable"), permissions=["change"])
    def disable_chunks(self, request, queryset):
        self._switch(request, queryset, False)


# --- keyword indexes ------------------------------------------------------------

@admin.register(BM25Index)
class BM25IndexAdmin(RoleAccessMixin, admin.ModelAdmin):
    """Read-only: the index is rebuilt by the retrieval code, never edited."""

    list_display = ("kb", "format_version", "chunk_count", "kb_version", "analyzer_fingerprint", "built_at")
    list_select_related = ("kb",)
    fields = ("kb", "format_version", "chunk_count", "kb_version", "analyzer_fingerprint", "built_at")
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).filter(kb__in=kbs_for_user(user=request.user).values("pk"))

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
