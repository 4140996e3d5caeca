"""manage.py source_add and source_run: one JSON line each, for automation."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from knowledge.models import Document, DocumentStatus
from sources.models import Source, Trigger

pytestmark = pytest.mark.django_db


def command(*args) -> dict:
    out = StringIO()
    call_command(*args, stdout=out)
    lines = out.getvalue().strip().splitlines()
    assert len(lines) == 1, lines
    return json.loads(lines[0])


def test_source_add_then_source_run_print_one_json_line_each(kb, alice, site, django_capture_on_commit_callbacks):
    memory, name = site
    memory.items = {"a": ("a.md", "# A\n\nalpha text"), "b": ("b.md", "# B\n\nbeta text")}
    memory.token = "s3cret"
    added = command("source_add", "--kb", kb.name, "--owner", "alice", "--kind", "memtest", "--setting", f"site={name}",
                    "--credential", "token=s3cret", "--schedule", "cron", "--cron", "0 3 * * *")
    source = Source.objects.get(pk=added["id"])
    assert source.settings == {"site": name} and source.created_by == alice and source.next_run_at is not None
    assert "s3cret" not in source.credentials and source.credential_names == ["token"]
    with django_capture_on_commit_callbacks(execute=True):
        line = command("source_run", str(source.pk))
    assert {k: line[k] for k in ("status", "added", "updated", "unchanged", "removed", "failed", "errors")} == {
        "status": "succeeded", "added": 2, "updated": 0, "unchanged": 0, "removed": 0, "failed": 0, "errors": []}
    assert source.runs.get().trigger == Trigger.CLI
    assert Document.objects.filter(kb=kb, status=DocumentStatus.READY).count() == 2
    del memory.items["b"]
    again = command("source_run", str(source.pk))
    assert (again["unchanged"], again["removed"], again["id"]) == (1, 1, source.runs.first().pk)


def test_source_add_refuses_bad_settings_and_a_viewer(kb, alice, bob, site):
    from knowledge.services.kbs import membership_set

    _, name = site
    with pytest.raises(CommandError, match="source_settings_invalid"):
        command("source_add", "--kb", kb.name, "--owner", "alice", "--kind", "memtest", "--setting", "site=nowhere")
    with pytest.raises(CommandError, match="source_kind_unknown"):
        command("source_add", "--kb", kb.name, "--owner", "alice", "--kind", "gopher", "--url", "gopher://x")
    membership_set(kb=kb, role="viewer", user=bob)
    with pytest.raises(CommandError, match="not an owner or editor"):
        command("source_add", "--kb", kb.name, "--owner", "bob", "--kind", "memtest", "--setting", f"site={name}")
    with pytest.raises(CommandError, match="No source"):
        command("source_run", "999999")
