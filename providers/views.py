"""The console's model pages (staff): the endpoints, adding and changing one, deleting it, testing it, the site's default.

Plain forms posted back to these views (no page script but the preset filler); every change goes
through providers/services.py, like the REST API's. A key is never rendered: the form says whether one
is set and leaves its field empty, and a blank field keeps the stored key.
"""
from __future__ import annotations

from functools import wraps

from django import forms
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods, require_POST

from core.errors import ApplicationError
from providers.catalog import env_models, model_choices
from providers.models import MODEL_NAME_MAX, MODELS_MAX, NAME_MAX, ModelEndpoint
from providers.presets import PRESETS, EndpointKind
from providers.probe import endpoint_test
from providers.services import API_KEY_MAX, BASE_URL_MAX, default_model_set, endpoint_create, endpoint_delete, endpoint_update


def staff_required(view):
    """Anonymous callers are sent to sign in; signed-in callers who are not staff get a 403."""
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not request.user.is_staff:
            raise PermissionDenied
        return view(request, *args, **kwargs)

    return wrapped


class EndpointForm(forms.Form):
    name = forms.CharField(max_length=NAME_MAX, label=_("Name"))
    kind = forms.ChoiceField(choices=EndpointKind.choices, label=_("Kind"))
    base_url = forms.CharField(max_length=BASE_URL_MAX, required=False, label=_("Base URL"))
    api_key = forms.CharField(max_length=API_KEY_MAX, required=False, strip=True, label=_("API key"),
                              widget=forms.PasswordInput(render_value=False))
    clear_key = forms.BooleanField(required=False, label=_("Remove the stored key"))
    model_names = forms.CharField(max_length=MODELS_MAX * (MODEL_NAME_MAX + 2), required=False, label=_("Model names"),
                                  widget=forms.Textarea(attrs={"rows": 4}))
    enabled = forms.BooleanField(required=False, label=_("Enabled"))


def _endpoint(endpoint_id: int) -> ModelEndpoint:
    endpoint = ModelEndpoint.objects.filter(pk=endpoint_id).first()
    if endpoint is None:
        raise Http404("Model endpoint not found.")
    return endpoint


def _form_context(form: EndpointForm, endpoint: ModelEndpoint | None, **extra) -> dict:
    presets = [(kind, label, PRESETS[kind]) for kind, label in EndpointKind.choices]
    return {"form": form, "endpoint": endpoint, "presets": presets, **extra}


def _apply(form: EndpointForm, endpoint: ModelEndpoint | None) -> ModelEndpoint | None:
    """Save the form through the services; a refusal becomes the form's error on its field."""
    data = dict(form.cleaned_data)
    try:
        if endpoint is None:
            data.pop("clear_key")
            return endpoint_create(**data)
        return endpoint_update(endpoint=endpoint, **data)
    except ApplicationError as exc:
        field = next(iter(exc.extra.get("fields", {})), None)
        form.add_error(field if field in form.fields else None, exc.message)
        return None


@staff_required
def endpoint_list(request: HttpRequest) -> HttpResponse:
    """The endpoints with their models, key status and default, and the form choosing the site's default."""
    endpoints = list(ModelEndpoint.objects.order_by("id"))
    choices = model_choices()
    return render(request, "providers/endpoints.html", {
        "endpoints": endpoints, "console_choices": [c for c in choices if c.endpoint_id is not None],
        "default": next((c for c in choices if c.is_default), None), "env_model": next(iter(env_models()), ""),
        "default_error": request.GET.get("error") == "default",
    })


@staff_required
@require_http_methods(["GET", "POST"])
def endpoint_new(request: HttpRequest) -> HttpResponse:
    form = EndpointForm(request.POST or None, initial={"kind": EndpointKind.DEEPSEEK, "enabled": True})
    if request.method == "POST" and form.is_valid() and (endpoint := _apply(form, None)) is not None:
        return redirect("model-endpoint", endpoint_id=endpoint.pk)
    return render(request, "providers/endpoint_form.html", _form_context(form, None))


@staff_required
@require_http_methods(["GET", "POST"])
def endpoint_edit(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    endpoint = _endpoint(endpoint_id)
    initial = {"name": endpoint.name, "kind": endpoint.kind, "base_url": endpoint.base_url,
               "model_names": "\n".join(endpoint.model_names or []), "enabled": endpoint.enabled}
    form = EndpointForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid() and _apply(form, endpoint) is not None:
        return redirect(f"/models/{endpoint.pk}/?saved=1")
    return render(request, "providers/endpoint_form.html",
                  _form_context(form, endpoint, saved=request.method == "GET" and request.GET.get("saved") == "1"))


@staff_required
@require_POST
def endpoint_test_page(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    """Test the saved endpoint and show its edit page with the outcome."""
    endpoint = _endpoint(endpoint_id)
    model = request.POST.get("model", "")
    result = endpoint_test(endpoint=endpoint, model=model if model in (endpoint.model_names or []) else "")
    initial = {"name": endpoint.name, "kind": endpoint.kind, "base_url": endpoint.base_url,
               "model_names": "\n".join(endpoint.model_names or []), "enabled": endpoint.enabled}
    return render(request, "providers/endpoint_form.html", _form_context(EndpointForm(initial=initial), endpoint, result=result))


@staff_required
@require_http_methods(["GET", "POST"])
def endpoint_delete_page(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    endpoint = _endpoint(endpoint_id)
    if request.method == "POST":
        endpoint_delete(endpoint=endpoint)
        return redirect("model-endpoints")
    return render(request, "providers/endpoint_delete.html", {"endpoint": endpoint})


@staff_required
@require_POST
def default_set_page(request: HttpRequest) -> HttpResponse:
    try:
        default_model_set(choice=request.POST.get("default", ""))
    except ApplicationError:
        return redirect("/models/?error=default")
    return redirect("model-endpoints")
