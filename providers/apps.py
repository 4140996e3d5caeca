"""App config for providers (the language-model endpoints)."""
from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ProvidersConfig(AppConfig):
    name = "providers"
    verbose_name = _("Language models")

    def ready(self) -> None:
        from knowledge import answer_models
        from providers import errors  # noqa: F401 - registers the app's error codes
        from providers.catalog import choice_get, model_choices

        answer_models.offer(model_choices, choice_get)  # the models a KB may answer with
