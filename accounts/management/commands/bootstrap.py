"""Local set-up after migrate: an admin account (local mode only) and the demo KB, queued, never ingested here.

Start-up must not wait for ingestion: the demo KB's files are stored as pending documents and left to the
background ingestion (``core.jobs.queue_only``), which runs once the server listens (thread mode: the web
process queues every pending document, ``knowledge.ingestion.recovery.start_sweeper``; Celery: the workers).
Documents a killed process left unfinished are resumed the same way, not here.
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.utils import timezone

from accounts.tokens import token_issue
from core.jobs import queue_only
from knowledge.ingestion.recovery import queue_pending
from knowledge.models import Document, DocumentStatus, KnowledgeBase
from knowledge.services.kbs import kb_create
from knowledge.services.sync import collect_files, kb_sync_files

DEMO_KB_NAME = "知库文档 zhiku docs"
BOOTSTRAP_TOKEN_NAME = "bootstrap"


def demo_files() -> dict[str, Path]:
    """The demo KB's files: the project's written docs, README.md and docs/**/*.md (source name → path).

    Markdown only: the screenshots in docs/img are pictures of the console, which OCR reads back as menu labels
    that then come up as sources (and they cost most of the demo's ingestion time: docs/ingestion.md).
    """
    root = settings.BASE_DIR
    found = collect_files(root / "docs", extra=[root / "README.md"])
    return {name: path for name, path in found.items() if path.suffix.lower() == ".md"}


class Command(BaseCommand):
    help = ("Create the local admin account and the demo KB from docs/ and README.md; its files are queued for "
            "the background ingestion, which runs once the server listens.")

    def add_arguments(self, parser):
        parser.add_argument("--no-demo", action="store_true")
        parser.add_argument("--url", default="",
                            help="the address the server will answer on (e.g. http://127.0.0.1:8000), "
                                 "to say where the demo KB's progress shows")

    def handle(self, *args, **opts):
        User = get_user_model()
        admin = User.objects.filter(username="admin").first()
        if settings.LOCAL_MODE:
            cred_file = settings.VAR_DIR / "admin-password.txt"
            if admin is None:
                password = os.environ.get("ZHIKU_ADMIN_PASSWORD") or secrets.token_urlsafe(12)
                admin = User.objects.create_superuser("admin", "admin@localhost", password)
                cred_file.write_text(password + "\n")
                cred_file.chmod(0o600)
            password = cred_file.read_text().strip() if cred_file.exists() else "(set earlier; see var/admin-password.txt)"
            # Keys are stored hashed, so the one printed is a new one; the previous start's is revoked.
            token, key = token_issue(user=admin, name=BOOTSTRAP_TOKEN_NAME, replace_named=True)
            self.stdout.write(self.style.SUCCESS(
                f"Local admin account — username: admin  password: {password}  "
                f"API token: {key} (new at each start, until {timezone.localtime(token.expiry):%Y-%m-%d})"
            ))
        where = ("the Celery workers" if settings.ZHIKU_INGEST_MODE == "celery"
                 else "the server, once it listens")
        unfinished = Document.objects.filter(status__in=[DocumentStatus.PENDING, DocumentStatus.PROCESSING]).count()
        if settings.ZHIKU_INGEST_MODE == "celery":
            with queue_only():  # their tasks may have gone with the broker: sent again (a duplicate is a no-op)
                queue_pending()
        if unfinished:
            self.stdout.write(f"{unfinished} unfinished ingestions are resumed in the background by {where}")
        if opts["no_demo"] or admin is None:
            return
        kb = KnowledgeBase.objects.filter(name=DEMO_KB_NAME, owner=admin).first()
        if kb is None:
            kb = kb_create(owner=admin, name=DEMO_KB_NAME, description="The project's own docs/ and README, as a demo.")
        files = demo_files()
        with queue_only():
            report = kb_sync_files(kb=kb, files=files, user=admin)
        queued = len(report.added) + len(report.updated)
        self.stdout.write(f"demo KB {kb.name!r} (id {kb.pk}): {len(files)} files, "
                          f"{len(report.added)} added, {len(report.updated)} updated, {len(report.removed)} removed")
        if queued:
            page = f"{opts['url'].rstrip('/')}/kbs/{kb.pk}/"
            self.stdout.write(self.style.SUCCESS(
                f"演示知识库的 {queued} 个文件在后台导入，进度见 {page}\n"
                f"The demo KB's {queued} files are ingested in the background by {where}; "
                f"watch them at {page} (the server does not wait for them)."))
