"""Create, change and delete model endpoints and choose the site's default model; every input checked here."""
from __future__ import annotations

from urllib.parse import urlsplit

from django.db import IntegrityError, transaction

from core.audit import Action, diff, record, snapshot
from core.errors import CoreError, fail
from providers.catalog import choice_get, env_models, model_choices
from providers.errors import ProvidersError
from providers.models import MODEL_NAME_MAX, MODELS_MAX, NAME_MAX, ModelEndpoint
from providers.presets import EndpointKind, preset_for
from providers.secrets import secret_encrypt

BASE_URL_MAX = 500
API_KEY_MAX = 1000
FIELDS = ("name", "kind", "base_url", "api_key", "clear_key", "model_names", "enabled")
# What an audit entry of an endpoint change compares (the key only as "changed", masked: core/audit/recording.py).
AUDITED = ("name", "kind", "base_url", "model_names", "enabled", "is_default", "default_model")


def _printable(text: str) -> bool:
    return text.isprintable() and not any(ch.isspace() for ch in text)


def name_clean(name) -> str:
    name = name.strip() if isinstance(name, str) else ""
    if not name or len(name) > NAME_MAX or "/" in name or not name.isprintable():
        raise fail(ProvidersError.INVALID_ENDPOINT_NAME, limit=NAME_MAX, on_field="name")
    return name


def kind_clean(kind) -> str:
    if kind not in EndpointKind.values:
        raise fail(ProvidersError.INVALID_ENDPOINT_KIND, kinds=", ".join(EndpointKind.values), on_field="kind")
    return kind


def base_url_clean(base_url, *, kind: str) -> str:
    """An http(s) URL with a host, without its trailing slash; blank: the kind's usual address."""
    url = (base_url.strip() if isinstance(base_url, str) else "").rstrip("/") or preset_for(kind).base_url
    if not url:
        raise fail(ProvidersError.INVALID_BASE_URL, "required", on_field="base_url")
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        parts, host = None, None
    if parts is None or parts.scheme not in ("http", "https") or not host or len(url) > BASE_URL_MAX or not _printable(url):
        raise fail(ProvidersError.INVALID_BASE_URL, limit=BASE_URL_MAX, on_field="base_url")
    return url


def model_names_clean(names) -> list[str]:
    """The model names, stripped, blanks dropped, each once, in order."""
    if isinstance(names, str):
        names = names.replace(",", "\n").splitlines()
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise fail(ProvidersError.INVALID_MODEL_NAMES, count=MODELS_MAX, limit=MODEL_NAME_MAX, on_field="model_names")
    cleaned = list(dict.fromkeys(n.strip() for n in names if n.strip()))
    if len(cleaned) > MODELS_MAX or any(len(n) > MODEL_NAME_MAX or not _printable(n) for n in cleaned):
        raise fail(ProvidersError.INVALID_MODEL_NAMES, count=MODELS_MAX, limit=MODEL_NAME_MAX, on_field="model_names")
    return cleaned


def api_key_clean(key) -> str:
    key = key.strip() if isinstance(key, str) else ""
    if len(key) > API_KEY_MAX or (key and not _printable(key)):
        raise fail(ProvidersError.INVALID_API_KEY, limit=API_KEY_MAX, on_field="api_key")
    return key


def _save(endpoint: ModelEndpoint) -> ModelEndpoint:
    try:
        with transaction.atomic():
            endpoint.save()
    except IntegrityError:
        raise fail(ProvidersError.ENDPOINT_NAME_TAKEN, name=endpoint.name, on_field="name") from None
    return endpoint


@transaction.atomic
def endpoint_create(*, name, kind=EndpointKind.OTHER, base_url="", api_key="", model_names=(), enabled=True) -> ModelEndpoint:
    """A new endpoint; a blank base URL takes its kind's usual one; the key is stored encrypted ("" : none)."""
    kind = kind_clean(kind)
    endpoint = ModelEndpoint(name=name_clean(name), kind=kind, base_url=base_url_clean(base_url, kind=kind),
                             api_key_encrypted=secret_encrypt(api_key_clean(api_key)),
                             model_names=model_names_clean(model_names), enabled=bool(enabled))
    _save(endpoint)
    record(Action.ENDPOINT_CREATE, obj=endpoint, changes={**snapshot(endpoint, AUDITED), **({"api_key": "set"} if api_key else {})})
    return endpoint


@transaction.atomic
def endpoint_update(*, endpoint: ModelEndpoint, **values) -> ModelEndpoint:
    """Change the given fields. ``api_key`` blank or absent keeps the stored key; ``clear_key`` removes it.

    Disabling the default endpoint, or dropping its default model, clears the site's default (the
    environment's model is the default again).
    """
    unknown = set(values) - set(FIELDS)
    if unknown:
        raise fail(CoreError.UNKNOWN_FIELD, fields=", ".join(sorted(unknown)))
    before = {**snapshot(endpoint, AUDITED), "api_key": endpoint.api_key_encrypted}
    if "name" in values:
        endpoint.name = name_clean(values["name"])
    if "kind" in values:
        endpoint.kind = kind_clean(values["kind"])
    if "base_url" in values or "kind" in values:
        endpoint.base_url = base_url_clean(values.get("base_url", endpoint.base_url), kind=endpoint.kind)
    if "model_names" in values:
        endpoint.model_names = model_names_clean(values["model_names"])
    if "enabled" in values:
        endpoint.enabled = bool(values["enabled"])
    key = api_key_clean(values.get("api_key", ""))
    if key:
        endpoint.api_key_encrypted = secret_encrypt(key)
    elif values.get("clear_key"):
        endpoint.api_key_encrypted = ""
    if endpoint.is_default and (not endpoint.enabled or endpoint.default_model not in endpoint.model_names):
        endpoint.is_default, endpoint.default_model = False, ""
    _save(endpoint)
    changed = diff(before, {**snapshot(endpoint, AUDITED), "api_key": endpoint.api_key_encrypted})
    if changed:
        record(Action.ENDPOINT_UPDATE, obj=endpoint, changes=changed)  # the key's change shows as masked
    return endpoint


def endpoint_delete(*, endpoint: ModelEndpoint) -> None:
    """Delete the endpoint; KBs that chose one of its models answer with the site's default from now on."""
    with transaction.atomic():
        record(Action.ENDPOINT_DELETE, obj=endpoint, changes={"name": endpoint.name, "base_url": endpoint.base_url})
        endpoint.delete()


@transaction.atomic
def default_model_set(*, choice: str) -> ModelEndpoint | None:
    """Make the console endpoint's model ``choice`` the site's default; "" (or the environment's model): the environment's."""
    choice = (choice or "").strip() if isinstance(choice, str) else None
    if choice is None:
        raise fail(ProvidersError.UNKNOWN_MODEL, model=choice, models="", on_field="default")
    found = choice_get(choice) if choice else None
    env = env_models()
    if found is not None and found.endpoint_id is None and found.model != env[0]:
        found = None  # only the environment's ZHIKU_LLM_MODEL can be the default among its models
    if choice and found is None:
        offered = [c.choice for c in model_choices() if c.endpoint_id is not None]
        raise fail(ProvidersError.UNKNOWN_MODEL, model=choice, models=", ".join(offered) or "-", on_field="default")
    previous = ModelEndpoint.objects.filter(is_default=True).values_list("name", "default_model").first()
    ModelEndpoint.objects.select_for_update().filter(is_default=True).update(is_default=False, default_model="")
    record(Action.DEFAULT_MODEL_SET, changes={"default": ["/".join(previous) if previous else "", choice]})
    if found is None or found.endpoint_id is None:
        return None
    endpoint = ModelEndpoint.objects.get(pk=found.endpoint_id)
    endpoint.is_default, endpoint.default_model = True, found.model
    endpoint.save(update_fields=["is_default", "default_model", "updated_at"])
    return endpoint
