"""Admin of knowledge bases: settings, members and evaluation questions, saved through the KB services."""
from __future__ import annotations

from django import forms
from django.contrib import admin
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils.translation import gettext_lazy as _

from core.errors import ApplicationError
from knowledge.access import has_role, kbs_for_user
from knowledge.admin.access import RoleAccessMixin
from knowledge.models import Document, EvalQuestion, KnowledgeBase, Membership, Role
from knowledge.services.kbs import (
    SETTING_FIELDS,
    _validate_settings,
    kb_create,
    kb_delete,
    kb_update,
    membership_remove,
    membership_set,
)


class _KBRowsInline(admin.TabularInline):
    """Rows of a KB that a KB role (``manage_role``) adds, changes and deletes."""

    extra = 0
    readonly_fields = ("created_at",)
    manage_role = Role.OWNER  # the KB role needed to add, change or delete rows

    def _is_owner(self, request, obj) -> bool:
        if not (request.user.is_active and request.user.is_staff):
            return False
        return obj is None or has_role(user=request.user, kb=obj, min_role=self.manage_role)

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_staff

    def has_add_permission(self, request, obj=None):
        return self._is_owner(request, obj)

    def has_change_permission(self, request, obj=None):
        return self._is_owner(request, obj)

    def has_delete_permission(self, request, obj=None):
        return self._is_owner(request, obj)


class MembershipInline(_KBRowsInline):
    model = Membership
    fields = ("user", "group", "role", "created_at")
    verbose_name = _("member")
    verbose_name_plural = _("Members (a user or a group)")


class EvalQuestionInline(_KBRowsInline):
    """Labelled questions for the KB's evaluation (POST /api/kbs/{id}/evaluate/); editors manage them."""

    model = EvalQuestion
    fields = ("text", "relevant", "answers", "created_at")
    verbose_name = _("evaluation question")
    verbose_name_plural = _("Evaluation questions (relevant: source names or external ids; empty = should be not found; "
                            "answers: answer spans, optional)")
    manage_role = Role.EDITOR


class KnowledgeBaseForm(forms.ModelForm):
    class Meta:
        model = KnowledgeBase
        fields = "__all__"

    def _service_check(self, key: str):
        value = self.cleaned_data.get(key)
        try:
            _validate_settings({key: value})
        except ApplicationError as exc:
            raise forms.ValidationError(exc.message, code=exc.code) from None
        return value

    def clean_user_words(self):
        return self._service_check("user_words")

    def clean_synonyms(self):
        return self._service_check("synonyms")

    def clean_answer_model(self):
        return self._service_check("answer_model")


@admin.register(KnowledgeBase)
class KnowledgeBaseAdmin(RoleAccessMixin, admin.ModelAdmin):
    """Staff see the KBs they own; saving goes through ``kb_create`` / ``kb_update`` (which bump the version)."""

    change_role = Role.OWNER
    form = KnowledgeBaseForm
    inlines = [MembershipInline, EvalQuestionInline]
    list_display = ("name", "owner", "embedding_model", "version", "document_count", "updated_at")
    list_select_related = ("owner",)
    search_fields = ("name", "description")
    fieldsets = (
        (None, {"fields": ("name", "description", "owner", "embedding_model", "embedding_dim", "version")}),
        (_("Retrieval settings"), {"fields": (
            "top_k", "candidates", "rrf_k", "fusion", "vector_weight", "keyword_weight",
            "rerank_enabled", "learn_from_feedback", "score_threshold", "answer_threshold", "not_found_text", "not_found_text_en",
        )}),
        (_("Answer settings"), {"fields": ("answer_mode", "answer_model", "system_prompt", "max_sources", "faq_direct_threshold")}),
        (_("Analysis (jieba)"), {"fields": ("user_words", "synonyms")}),
        (_("Timestamps"), {"fields": ("created_at", "updated_at"), "classes": ("collapse",)}),
    )

    def kb_of(self, obj):
        return obj

    def get_queryset(self, request):
        docs = Document.objects.filter(kb=OuterRef("pk")).order_by().values("kb").annotate(n=Count("pk")).values("n")
        qs = super().get_queryset(request).annotate(
            documents_n=Coalesce(Subquery(docs, output_field=IntegerField()), 0),
        )
        if request.user.is_superuser:
            return qs
        return qs.filter(pk__in=kbs_for_user(user=request.user, min_role=Role.OWNER).values("pk"))

    def get_readonly_fields(self, request, obj=None):
        fields = ["owner", "embedding_dim", "version", "created_at", "updated_at"]
        if obj is not None:
            fields.append("embedding_model")  # changing the model means re-embedding: `manage.py` / kb_reembed
        return fields

    def has_add_permission(self, request):
        return self.has_module_permission(request)

    def has_change_permission(self, request, obj=None):
        if obj is None:
            return self.has_module_permission(request)  # the list shows only KBs they own
        return super().has_change_permission(request, obj)

    @admin.display(description=_("documents"), ordering="documents_n")
    def document_count(self, obj) -> int:
        return getattr(obj, "documents_n", 0)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        if change:
            changed = {f: data[f] for f in form.changed_data if f == "name" or f in SETTING_FIELDS}
            if changed:
                # A fresh copy: the form already wrote the new values onto ``obj``.
                kb_update(kb=KnowledgeBase.objects.get(pk=obj.pk), **changed)
        else:
            values = {f: data[f] for f in SETTING_FIELDS if f in data}
            created = kb_create(owner=request.user, name=data["name"], embedding_model=data.get("embedding_model") or None, **values)
            obj.pk = created.pk
            obj._state.adding = False
        obj.refresh_from_db()

    def save_formset(self, request, form, formset, change):
        if formset.model is not Membership:
            return super().save_formset(request, form, formset, change)
        kb = form.instance
        instances = formset.save(commit=False)
        for membership in formset.deleted_objects:
            membership_remove(membership=membership)
        for membership in instances:
            if membership.pk:
                before = Membership.objects.get(pk=membership.pk)
                if (before.user_id, before.group_id) != (membership.user_id, membership.group_id):
                    membership_remove(membership=before)
            membership_set(kb=kb, role=membership.role, user=membership.user, group=membership.group)

    def delete_model(self, request, obj):
        kb_delete(kb=obj)

    def delete_queryset(self, request, queryset):
        for kb in queryset:
            if self.has_delete_permission(request, kb):
                kb_delete(kb=kb)
