"""App config for providers (the language-model endpoints)."""
from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ProvidersConfig(AppConfig):
    name = "providers"
    verbose_name = _("Language models")
