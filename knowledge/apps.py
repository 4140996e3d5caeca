"""App config for knowledge bases, documents, chunks, ingestion and retrieval."""
from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    verbose_name = _("Knowledge")

    def ready(self) -> None:
        from knowledge import errors, signals  # noqa: F401 - registers the codes, connects the receivers

