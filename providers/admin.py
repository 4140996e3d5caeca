"""Admin: model endpoints, saved through providers/services.py; the key is write-only (never rendered, blank keeps it)."""
from django import forms
from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from core.errors import ApplicationError
from providers.models import ModelEndpoint
from providers.services import (
    API_KEY_MAX,
    api_key_clean,
    base_url_clean,
    endpoint_create,
    endpoint_update,
    kind_clean,
    model_names_clean,
    name_clean,
)


class EndpointAdminForm(forms.ModelForm):
    api_key = forms.CharField(label=_("API key"), required=False, max_length=API_KEY_MAX,
                              widget=forms.PasswordInput(render_value=False),
                              help_text=_("Stored encrypted, never shown. Leave empty to keep the stored key."))
    clear_key = forms.BooleanField(label=_("Remove the stored key"), required=False)
    model_names_text = forms.CharField(label=_("model names"), required=False, widget=forms.Textarea(attrs={"rows": 4}),
                                       help_text=_("One a line."))

    class Meta:
        model = ModelEndpoint
        fields = ["name", "kind", "base_url", "enabled"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["base_url"].required = False
        if self.instance.pk:
            self.initial["model_names_text"] = "\n".join(self.instance.model_names or [])

    def clean(self):
        data = super().clean()
        try:
            kind = kind_clean(data.get("kind", ""))
            data["base_url"] = base_url_clean(data.get("base_url", ""), kind=kind)
            data["model_names"] = model_names_clean(data.get("model_names_text", ""))
            data["api_key"] = api_key_clean(data.get("api_key", ""))
            if "name" in data:
                data["name"] = name_clean(data["name"])
        except ApplicationError as exc:
            raise forms.ValidationError(exc.message) from None
        return data

    def values(self) -> dict:
        data = self.cleaned_data
        return {name: data[name] for name in ("name", "kind", "base_url", "api_key", "model_names", "enabled")}


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(admin.ModelAdmin):
    form = EndpointAdminForm
    list_display = ["name", "kind", "base_url", "enabled", "is_default", "default_model", "key_status", "updated_at"]
    list_filter = ["kind", "enabled"]
    search_fields = ["name", "base_url"]
    fields = ["name", "kind", "base_url", "api_key", "key_status", "clear_key", "model_names_text", "enabled",
              "is_default", "default_model"]
    readonly_fields = ["key_status", "is_default", "default_model"]

    @admin.display(description=_("API key"))
    def key_status(self, obj: ModelEndpoint) -> str:
        return str(_("set") if obj.has_key else _("not set"))

    def save_model(self, request, obj, form, change):
        # Through the services, as the console and the API save (the key encrypted there).
        if change:
            saved = endpoint_update(endpoint=ModelEndpoint.objects.get(pk=obj.pk), clear_key=form.cleaned_data["clear_key"],
                                    **form.values())
        else:
            saved = endpoint_create(**form.values())
        obj.pk = saved.pk

    def save_related(self, request, form, formsets, change):
        pass
