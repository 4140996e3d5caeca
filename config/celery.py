"""Celery application; used only when REDIS_URL is set (the broker)."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("zhiku")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
