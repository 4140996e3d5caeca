"""Which models the site offers and where each is: the environment's, then the enabled console endpoints' (docs/llm.md).

A model is named by a *choice*, the value a KB's ``answer_model`` (and an assistant's model) stores. The first
source offering a model lists it bare: the environment (ZHIKU_LLM_MODEL, ZHIKU_LLM_MODELS), then the enabled
endpoints by creation; a later endpoint offering it lists ``<endpoint name>/<model>`` (also accepted for the
bare one), so choices are unique and a new endpoint never changes what a choice names. The default ("") is
the console's default endpoint and model while it is enabled and offers it, else ZHIKU_LLM_MODEL.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings

from providers.models import ModelEndpoint
from providers.secrets import InvalidToken, secret_decrypt

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelChoice:
    """One model the site offers, and where it is (no key: ``choice_api_key`` reads it when a call needs it)."""

    choice: str
    model: str
    base_url: str
    endpoint_id: int | None = None
    """None: the environment's endpoint (ZHIKU_LLM_BASE_URL)."""
    endpoint_name: str = ""
    is_default: bool = False

    @property
    def source(self) -> str:
        return self.endpoint_name or "env"


def _setting(name: str) -> str:
    return str(getattr(settings, name, "") or "").strip()


def env_models() -> list[str]:
    """The environment's models: ZHIKU_LLM_MODEL first, then ZHIKU_LLM_MODELS (none unless ZHIKU_LLM_BASE_URL is set too)."""
    base_url, default = _setting("ZHIKU_LLM_BASE_URL"), _setting("ZHIKU_LLM_MODEL")
    if not base_url or not default:
        return []
    extra = getattr(settings, "ZHIKU_LLM_MODELS", []) or []
    if isinstance(extra, str):
        extra = extra.split(",")
    return list(dict.fromkeys([default, *(str(m).strip() for m in extra if str(m).strip())]))


def model_choices() -> list[ModelChoice]:
    """Every model the site offers, environment first, each with its unique choice string (one query)."""
    endpoints = list(ModelEndpoint.objects.filter(enabled=True).order_by("id").only(
        "id", "name", "base_url", "model_names", "is_default", "default_model"))
    default = next(((e.pk, e.default_model) for e in endpoints if e.is_default and e.default_model in (e.model_names or [])), None)
    env_url = _setting("ZHIKU_LLM_BASE_URL")
    choices = [ModelChoice(choice=m, model=m, base_url=env_url, is_default=default is None and i == 0)
               for i, m in enumerate(env_models())]
    taken = {c.choice for c in choices}
    for endpoint in endpoints:
        for model in dict.fromkeys(endpoint.model_names or []):
            choice = model if model not in taken else f"{endpoint.name}/{model}"
            if choice in taken:
                continue  # a model name that happens to spell another endpoint's qualified choice
            taken.add(choice)
            choices.append(ModelChoice(choice=choice, model=model, base_url=endpoint.base_url, endpoint_id=endpoint.pk,
                                       endpoint_name=endpoint.name, is_default=default == (endpoint.pk, model)))
    return choices


def choice_get(choice: str = "") -> ModelChoice | None:
    """The offered model ``choice`` names ("" the site's default), or None: not offered (or no model at all)."""
    choice = (choice or "").strip()
    offered = model_choices()
    if not choice:
        return next((c for c in offered if c.is_default), None)
    for c in offered:
        if c.choice == choice:
            return c
    name, slash, model = choice.partition("/")
    if slash:
        return next((c for c in offered if c.endpoint_name == name and c.model == model), None)
    return None


def choice_api_key(choice: ModelChoice) -> str:
    """The key to call ``choice`` with: ZHIKU_LLM_API_KEY, or the endpoint's, decrypted ("" when it has none or it cannot be read)."""
    if choice.endpoint_id is None:
        return _setting("ZHIKU_LLM_API_KEY")
    token = ModelEndpoint.objects.filter(pk=choice.endpoint_id).values_list("api_key_encrypted", flat=True).first() or ""
    try:
        return secret_decrypt(token)
    except InvalidToken:
        logger.warning("The API key of model endpoint %s cannot be decrypted (ZHIKU_SECRETS_KEY or SECRET_KEY changed "
                       "without the old one kept); calling it without a key. Enter the key again in the console.",
                       choice.endpoint_name)
        return ""
