"""App config for knowledge bases, documents, chunks, ingestion and retrieval."""
from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    verbose_name = "知识库 Knowledge"

    def ready(self) -> None:
        from knowledge import signals  # noqa: F401 - connects the receivers

