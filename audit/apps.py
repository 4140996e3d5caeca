"""App config for the audit log; its signal receivers and error codes are connected when Django starts."""
from django.apps import AppConfig
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = _("Audit log")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from audit import errors, receivers  # noqa: F401 - registers the codes, connects the receivers
        from audit.purge import HARD_MINIMUM_DAYS, purge_if_due
        from core.audit import context
        from knowledge.ingestion.recovery import each_round

        if settings.ZHIKU_AUDIT_RETENTION_DAYS < HARD_MINIMUM_DAYS:
            raise ImproperlyConfigured(f"ZHIKU_AUDIT_RETENTION_DAYS must be at least {HARD_MINIMUM_DAYS} (days): "
                                       "the database refuses to delete younger audit entries.")

        context.detect_process_origin()
        each_round(purge_if_due)  # entries past ZHIKU_AUDIT_RETENTION_DAYS, at most once a day
