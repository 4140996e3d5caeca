"""App config for sources: connectors that keep a KB in sync with where its documents live."""
from django.apps import AppConfig
from django.utils.translation import pgettext_lazy


class SourcesConfig(AppConfig):
    name = "sources"
    verbose_name = pgettext_lazy("data source", "Sources")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The app's error codes (and each kind's ``sources/kinds/<kind>_errors.py``) join the one registry.
        from sources import errors  # noqa: F401 - importing it registers the codes
