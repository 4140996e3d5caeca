"""App config for the audit log; its signal receivers and error codes are connected when Django starts."""
from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = _("Audit log")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from audit import context, errors, receivers  # noqa: F401

        context.detect_process_origin()
