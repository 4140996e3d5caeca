from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AssistantsConfig(AppConfig):
    name = "assistants"
    verbose_name = _("assistants")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The app's error codes join the one registry (core/errors.py) when Django starts.
        from assistants import errors  # noqa: F401 - imported to register the codes
