"""Admin of documents: the upload page, group restrictions, retry and re-index actions."""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import RelatedOnlyFieldListFilter
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.text import Truncator
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _

from core.errors import ApplicationError
from knowledge.access import documents_readable_q, kbs_for_user
from knowledge.admin.access import RoleAccessMixin, inline_template
from knowledge.errors import document_failure_text
from knowledge.ingestion.upload import documents_upload_restricted, uploaded_files_to_items
from knowledge.models import Document, KnowledgeBase, Role
from knowledge.selectors import kb_get_for_user
from knowledge.services.documents import document_delete, document_reindex, document_restrict, document_retry

# Strings of the upload templates below (translated there with {% translate %}).
gettext_noop("Upload documents")
gettext_noop("Upload")


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
    files = MultipleFileField(  # type: ignore[assignment]  # a form field (in base_fields), not BaseForm.files
        label=_("Files"), help_text="MD, TXT, HTML, DOCX, PDF, CSV, XLSX, EML, JSONL")
    restricted_to_groups = forms.ModelMultipleChoiceField(
        queryset=Group.objects.order_by("name"), required=False, label=_("Restricted to groups"),
        help_text=_("Leave empty for everyone with access to the KB."),
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["kb"].queryset = kbs_for_user(user=user, min_role=Role.EDITOR).order_by("name")


CHANGE_LIST_SOURCE = (
    '{% extends "admin/change_list.html" %}{% load i18n %}\n'
    '{% block object-tools-items %}{% if upload_url %}'
    '<li><a href="{{ upload_url }}" class="addlink">{% translate "Upload documents" %}</a></li>'
    '{% endif %}{% endblock %}\n'
)

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
        return inline_template(CHANGE_LIST_SOURCE)

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
        # The code's sentence in the viewer's language (knowledge.errors), not the English stored at ingestion.
        return f"{obj.error_code}: {Truncator(document_failure_text(obj.error_code, obj.error_message)).chars(80)}"

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
                        names = {"name": o.document.source_name, "version": o.document.version}
                        if o.unchanged:
                            self.message_user(request, gettext("Unchanged: %(name)s (v%(version)s)") % names, messages.INFO)
                        else:
                            self.message_user(request, gettext("Uploaded, processing: %(name)s (v%(version)s)") % names, messages.SUCCESS)
                    changelist = reverse("admin:knowledge_document_changelist")
                    return HttpResponseRedirect(f"{changelist}?kb__id__exact={kb.pk}")
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("Upload documents"),
            "form": form,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, inline_template(UPLOAD_SOURCE), context, status=status_code)

    def save_model(self, request, obj, form, change):
        # Only the M2M restriction is editable (saved in save_related). Saving the row
        # would overwrite status/progress written concurrently by ingestion.
        pass

    def save_related(self, request, form, formsets, change):
        # The restriction goes through the service (it follows an in-flight new version and is audited).
        document_restrict(document=form.instance, groups=list(form.cleaned_data["restricted_to_groups"]))

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
                refused.append(f"{document}: {gettext('editor role required')}")
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
