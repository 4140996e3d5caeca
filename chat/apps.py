"""App config for chat."""
from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = _("Chat")

    def ready(self) -> None:
        from chat import errors  # noqa: F401 - registers the app's error codes
        from chat.golden import golden_sweep
        from knowledge.ingestion.recovery import each_round

        each_round(golden_sweep)  # golden questions re-run after a change and nightly (docs/health.md)
