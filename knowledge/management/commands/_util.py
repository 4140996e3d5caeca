"""Helpers shared by the management commands."""
from __future__ import annotations

import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from knowledge.models import Document, DocumentStatus, KnowledgeBase


def resolve_kb(ref: str) -> KnowledgeBase | None:
    """A KB by id or by name (None if there is none)."""
    if ref.isdigit():
        return KnowledgeBase.objects.filter(pk=int(ref)).first()
    matches = list(KnowledgeBase.objects.filter(name=ref)[:2])
    if len(matches) > 1:
        raise CommandError(f"Several knowledge bases are named {ref!r}; use its id.")
    return matches[0] if matches else None


def named_user(username: str):
    """The user called ``username``; a CommandError if there is none."""
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"No user {username!r}.")
    return user


def resolve_owner(username: str | None):
    if username:
        return named_user(username)
    user = get_user_model().objects.filter(is_superuser=True).order_by("id").first()
    if user is None:
        raise CommandError("No superuser exists; pass --owner or run `manage.py bootstrap` first.")
    return user


def wait_for_documents(ids: list[int], *, timeout: float = 3600.0) -> None:
    """Wait until the documents have left pending/processing (thread or Celery mode)."""
    if settings.ZHIKU_INGEST_MODE == "sync":
        return  # already ingested when the upload committed
    if settings.ZHIKU_INGEST_MODE == "thread":
        from core.jobs import wait_for_background_ingestion

        wait_for_background_ingestion(timeout=timeout)
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = Document.objects.filter(pk__in=ids, status__in=[DocumentStatus.PENDING, DocumentStatus.PROCESSING]).count()
        if not busy:
            return
        time.sleep(0.5)
    raise CommandError("Timed out waiting for ingestion.")
