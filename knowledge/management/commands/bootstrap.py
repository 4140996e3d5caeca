"""Local set-up after migrate: an admin account (local mode only), the demo KB, stuck ingestions requeued."""
from __future__ import annotations

import os
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.utils import timezone

from accounts.tokens import token_issue
from knowledge.models import KnowledgeBase
from knowledge.services.documents import documents_requeue_stuck
from knowledge.services.kbs import kb_create
from knowledge.services.sync import collect_files, kb_sync_files

from ._util import wait_for_documents

DEMO_KB_NAME = "知库文档 zhiku docs"
BOOTSTRAP_TOKEN_NAME = "bootstrap"


class Command(BaseCommand):
    help = "Create the local admin account and the demo KB from docs/ and README.md."

    def add_arguments(self, parser):
        parser.add_argument("--no-demo", action="store_true")

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
        requeued = documents_requeue_stuck()
        if requeued:
            self.stdout.write(f"requeued {requeued} unfinished ingestions")
        if opts["no_demo"] or admin is None:
            return
        kb = KnowledgeBase.objects.filter(name=DEMO_KB_NAME, owner=admin).first()
        if kb is None:
            kb = kb_create(owner=admin, name=DEMO_KB_NAME, description="The project's own docs/ and README, as a demo.")
        root = settings.BASE_DIR
        files = collect_files(root / "docs", extra=[root / "README.md"])
        report = kb_sync_files(kb=kb, files=files, user=admin)
        wait_for_documents(report.document_ids)
        self.stdout.write(f"demo KB {kb.name!r} (id {kb.pk}): {len(files)} files, "
                          f"{len(report.added)} added, {len(report.updated)} updated, {len(report.removed)} removed")
