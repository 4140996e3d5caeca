"""ModelEndpoint: an OpenAI-compatible service staff set up in the console, with its key encrypted at rest."""
from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from providers.presets import EndpointKind

NAME_MAX = 60
MODEL_NAME_MAX = 120
MODELS_MAX = 50


class ModelEndpoint(models.Model):
    """One endpoint: where it is, its key (a Fernet token, providers/secrets.py), the model names it offers.

    At most one endpoint is the site's default, naming one of its models (``default_model``): the
    model a chat answers with when its KB names none (providers/catalog.py).
    """

    name = models.CharField(_("name"), max_length=NAME_MAX, unique=True,
                            help_text=_("Shown when a model is chosen; no slash (it separates the name from the model)."))
    kind = models.CharField(_("kind"), max_length=20, choices=EndpointKind.choices, default=EndpointKind.OTHER)
    base_url = models.CharField(_("base URL"), max_length=500)
    api_key_encrypted = models.TextField(_("API key (encrypted)"), blank=True, default="", editable=False,
                                         help_text=_("A Fernet token; empty when the endpoint needs no key."))
    model_names = models.JSONField(_("model names"), default=list, blank=True)
    enabled = models.BooleanField(_("enabled"), default=True)
    is_default = models.BooleanField(_("site default"), default=False)
    default_model = models.CharField(_("default model"), max_length=MODEL_NAME_MAX, blank=True, default="")
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("model endpoint")
        verbose_name_plural = _("model endpoints")
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["is_default"], condition=Q(is_default=True), name="one_default_model_endpoint"),
            models.CheckConstraint(condition=Q(is_default=False) | ~Q(default_model=""), name="default_endpoint_names_its_model"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def has_key(self) -> bool:
        return bool(self.api_key_encrypted)
