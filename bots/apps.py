from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class BotsConfig(AppConfig):
    name = "bots"
    verbose_name = _("chat bots")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The app's error codes join the one registry (core/errors.py) when Django starts.
        from bots import errors  # noqa: F401 - imported to register the codes
