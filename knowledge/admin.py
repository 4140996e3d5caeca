"""Admin for knowledge bases, documents and chunks: every write goes through the services, access follows KB roles."""
from __future__ import annotations

from functools import lru_cache

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import RelatedOnlyFieldListFilter
from django.contrib.auth.admin import GroupAdmin
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db.models import Count, F, IntegerField, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template import engines
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.text import Truncator
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop

from knowledge.access import documents_readable_q, has_role, kbs_for_user
from knowledge.errors import ApplicationError
from knowledge.ingest_errors import ingest_error_message
from knowledge.models import BM25Index, Chunk, Document, EvalQuestion, KnowledgeBase, Membership, Role
from knowledge.selectors import kb_get_for_user
from knowledge.ingestion.upload import documents_upload_restricted, uploaded_files_to_items
from knowledge.services.chunks import chunk_update, chunks_set_enabled
from knowledge.services.documents import document_delete, document_reindex, document_retry
from knowledge.services.kbs import (
    SETTING_FIELDS,
    _validate_settings,
    kb_create,
    kb_delete,
    kb_update,
    membership_remove,
    membership_set,
)

admin.site.site_header = _("Zhiku administration")
admin.site.site_title = _("Zhiku")
admin.site.index_title = _("Knowledge administration")
# Strings of the admin's own templates below (translated there with {% translate %}).
gettext_noop("Upload documents")
gettext_noop("Upload")


class RoleAccessMixin:
    """Any active staff user reaches these pages; their KB roles decide what they see and change.

    ``change_role`` is the least role needed to change (and delete) an object.
    """

    change_role: Role = Role.EDITOR

    def kb_of(self, obj) -> KnowledgeBase:
        return obj.kb

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request, obj=None) -> bool:
        if not self.has_module_permission(request):
            return False
        return obj is None or has_role(user=request.user, kb=self.kb_of(obj), min_role=Role.VIEWER)

    def has_change_permission(self, request, obj=None) -> bool:
        if not self.has_module_permission(request):
            return False
        if obj is None:
            return request.user.is_superuser or kbs_for_user(user=request.user, min_role=self.change_role).exists()
        return has_role(user=request.user, kb=self.kb_of(obj), min_role=self.change_role)

    def has_delete_permission(self, request, obj=None) -> bool:
        return self.has_change_permission(request, obj)

    def get_deleted_objects(self, objs, request):
        # Deleting a KB or a document removes its chunks (and index) through the
        # service; the role checked on the object itself is what authorises that,
        # not the per-model delete permissions of the read-only chunk/index admins.
        # The objects selected themselves still need the permission.
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        own = {p for p in perms_needed if p == self.model._meta.verbose_name}
        return deleted, counts, own, protected

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        # A service refusing a save (name taken, bad setting...) rolls the admin's
        # transaction back; show its message instead of a 500.
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ApplicationError as exc:
            self.message_user(request, f"{exc.message} ({exc.code})", messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())


@lru_cache(maxsize=None)
def _template(source: str):
    return engines["django"].from_string(source)


# --- knowledge bases ------------------------------------------------------------

class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    fields = ("user", "group", "role", "created_at")
    readonly_fields = ("created_at",)
    verbose_name = _("member")
    verbose_name_plural = _("Members (a user or a group)")
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


class EvalQuestionInline(MembershipInline):
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
            "rerank_enabled", "score_threshold", "answer_threshold", "not_found_text",
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


# --- documents ------------------------------------------------------------------

class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """A file field taking several files at once (the pattern from Django's docs)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, (list, tuple)):
            if not data and self.required:
                raise forms.ValidationError(self.error_messages["required"], code="required")
            return [single(d, initial) for d in data]
        return [single(data, initial)]


class DocumentUploadForm(forms.Form):
    kb = forms.ModelChoiceField(queryset=KnowledgeBase.objects.none(), label=_("Knowledge base"))
    files = MultipleFileField(label=_("Files"), help_text="MD, TXT, HTML, DOCX, PDF, CSV, XLSX, EML, JSONL")
    restricted_to_groups = forms.ModelMultipleChoiceField(
        queryset=Group.objects.order_by("name"), required=False, label=_("Restricted to groups"),
        help_text=_("Leave empty for everyone with access to the KB."),
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["kb"].queryset = kbs_for_user(user=user, min_role=Role.EDITOR).order_by("name")


CHANGE_LIST_SOURCE = """{% extends "admin/change_list.html" %}{% load i18n %}
{% block object-tools-items %}{% if upload_url %}<li><a href="{{ upload_url }}" class="addlink">{% translate "Upload documents" %}</a></li>{% endif %}{% endblock %}
"""

UPLOAD_SOURCE = """{% extends "admin/base_site.html" %}
{% load i18n admin_urls %}
{% block breadcrumbs %}<div class="breadcrumbs"><a href="{% url 'admin:index' %}">{% translate 'Home' %}</a>
&rsaquo; <a href="{% url 'admin:app_list' app_label=opts.app_label %}">{{ opts.app_config.verbose_name }}</a>
&rsaquo; <a href="{% url opts|admin_urlname:'changelist' %}">{{ opts.verbose_name_plural|capfirst }}</a>
&rsaquo; {{ title }}</div>{% endblock %}
{% block content %}<div id="content-main">
<form method="post" enctype="multipart/form-data" novalidate>{% csrf_token %}
{% if form.non_field_errors %}<p class="errornote">{% for e in form.non_field_errors %}{{ e }} {% endfor %}</p>{% endif %}
<fieldset class="module aligned">
{% for field in form %}<div class="form-row">{{ field.errors }}<div class="flex-container">{{ field.label_tag }} {{ field }}</div>
{% if field.help_text %}<div class="help">{{ field.help_text }}</div>{% endif %}</div>{% endfor %}
</fieldset>
<div class="submit-row"><input type="submit" class="default" value="{% translate 'Upload' %}"></div>
</form></div>{% endblock %}
"""


@admin.register(Document)
class DocumentAdmin(RoleAccessMixin, admin.ModelAdmin):
    """Documents are read-only here except their group restriction; files arrive through the upload page."""

    list_display = ("source_name", "kb", "status", "progress_display", "error_display", "version", "doc_type", "updated_at")
    list_select_related = ("kb",)
    list_filter = (("kb", RelatedOnlyFieldListFilter), "status", "doc_type")
    search_fields = ("source_name", "title", "external_id")
    filter_horizontal = ("restricted_to_groups",)
    actions = ["retry_documents", "reindex_documents"]
    fields = (
        "kb", "source_name", "title", "external_id", "doc_type", "size", "sha256", "file", "status",
        "chunks_done", "chunks_total", "chunk_size", "chunk_overlap", "error_code", "error_message", "version", "replaces", "metadata",
        "restricted_to_groups", "uploaded_by", "created_at", "updated_at",
    )
    readonly_fields = tuple(f for f in fields if f != "restricted_to_groups")

    @property
    def change_list_template(self):
        return _template(CHANGE_LIST_SOURCE)

    def get_queryset(self, request):
        return super().get_queryset(request).filter(documents_readable_q(user=request.user))

    def has_add_permission(self, request):
        return self.has_module_permission(request) and (
            request.user.is_superuser or kbs_for_user(user=request.user, min_role=Role.EDITOR).exists()
        )

    @admin.display(description=_("progress"))
    def progress_display(self, obj: Document) -> str:
        return f"{obj.chunks_done}/{obj.chunks_total}"

    @admin.display(description=_("error"))
    def error_display(self, obj: Document) -> str:
        if not obj.error_code:
            return ""
        # The code's sentence in the viewer's language (knowledge.ingest_errors), not the English stored at ingestion.
        return f"{obj.error_code}: {Truncator(ingest_error_message(obj.error_code, obj.error_message)).chars(80)}"

    # Adding means uploading; the upload page reads files and calls the upload service.
    def add_view(self, request, form_url="", extra_context=None):
        return HttpResponseRedirect(reverse("admin:knowledge_document_upload"))

    def get_urls(self):
        extra = [path("upload/", self.admin_site.admin_view(self.upload_view), name="knowledge_document_upload")]
        return extra + super().get_urls()

    def changelist_view(self, request, extra_context=None):
        extra_context = dict(extra_context or {})
        if self.has_add_permission(request):
            extra_context["upload_url"] = reverse("admin:knowledge_document_upload")
        return super().changelist_view(request, extra_context)

    def upload_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_add_permission(request):
            raise DjangoPermissionDenied
        form = DocumentUploadForm(request.POST or None, request.FILES or None, user=request.user)
        status_code = 200
        if request.method == "POST":
            status_code = 400
            if form.is_valid():
                try:
                    kb = kb_get_for_user(user=request.user, kb_id=form.cleaned_data["kb"].pk, min_role=Role.EDITOR)
                    outcomes = documents_upload_restricted(
                        kb=kb, items=uploaded_files_to_items(form.cleaned_data["files"]), user=request.user,
                        groups=list(form.cleaned_data["restricted_to_groups"]),
                    )
                except ApplicationError as exc:
                    form.add_error(None, f"{exc.message} ({exc.code})")
                    status_code = exc.status_code
                else:
                    for o in outcomes:
                        if o.unchanged:
                            self.message_user(request, gettext("Unchanged: %(name)s (v%(version)s)") % {"name": o.document.source_name, "version": o.document.version}, messages.INFO)
                        else:
                            self.message_user(request, gettext("Uploaded, processing: %(name)s (v%(version)s)") % {"name": o.document.source_name, "version": o.document.version}, messages.SUCCESS)
                    changelist = reverse("admin:knowledge_document_changelist")
                    return HttpResponseRedirect(f"{changelist}?kb__id__exact={kb.pk}")
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("Upload documents"),
            "form": form,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, _template(UPLOAD_SOURCE), context, status=status_code)

    def save_model(self, request, obj, form, change):
        # Only the M2M restriction is editable (saved in save_related). Saving the row
        # would overwrite status/progress written concurrently by ingestion.
        pass

    def delete_model(self, request, obj):
        document_delete(document=obj)

    def delete_queryset(self, request, queryset):
        for document in queryset.select_related("kb"):
            if self.has_delete_permission(request, document):
                document_delete(document=document)

    def _apply(self, request, queryset, service, verb: str) -> None:
        done, refused = 0, []
        for document in queryset.select_related("kb"):
            if not self.has_change_permission(request, document):
                refused.append("%s: %s" % (document, gettext("editor role required")))
                continue
            try:
                service(document=document)
                done += 1
            except ApplicationError as exc:
                refused.append(f"{document}: {exc.message}")
        if done:
            self.message_user(request, f"{verb}: {done}", messages.SUCCESS)
        for line in refused:
            self.message_user(request, line, messages.WARNING)

    @admin.action(description=_("Retry failed documents"), permissions=["change"])
    def retry_documents(self, request, queryset):
        self._apply(request, queryset, document_retry, gettext("Queued again"))

    @admin.action(description=_("Re-index"), permissions=["change"])
    def reindex_documents(self, request, queryset):
        self._apply(request, queryset, document_reindex, gettext("Queued for re-indexing"))


# --- chunks ---------------------------------------------------------------------

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
        self.message_user(request, "%s: %s" % (gettext("Enabled") if enabled else gettext("Disabled"), changed), messages.SUCCESS)
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


class RestrictingGroupAdmin(GroupAdmin):
    """Django's group admin, refusing to delete the last reader groups of a restricted document.

    Deleting the group would delete its restriction rows and leave such a document
    readable by every viewer of its KB: access would widen without anyone choosing
    it. The confirmation page lists those documents as protected (as Django does for
    protected foreign keys), so the owner first re-restricts or deletes them.
    """

    def get_deleted_objects(self, objs, request):
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        groups = [g.pk for g in objs]
        # Documents all of whose reader groups are among those deleted (one annotate: the counts share a join).
        sole = (Document.objects.annotate(
                    readers=Count("restricted_to_groups", distinct=True),
                    leaving=Count("restricted_to_groups", filter=Q(restricted_to_groups__in=groups), distinct=True))
                .filter(leaving__gt=0, leaving=F("readers")).select_related("kb").order_by("pk"))
        protected = list(protected) + [
            _("Document %(name)s in %(kb)s: no reader group would be left") % {"name": d.source_name, "kb": d.kb.name}
            for d in sole]
        return deleted, counts, perms_needed, protected


admin.site.unregister(Group)
admin.site.register(Group, RestrictingGroupAdmin)
