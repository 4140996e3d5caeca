"""The audit table is append-only in PostgreSQL itself, and the retention purge removes only old entries."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from audit.models import AuditEntry, AuditImmutable
from audit.purge import audit_purge
from core.audit import Action, record

pytestmark = pytest.mark.django_db


def _entry(days_ago: float = 0, **kwargs) -> AuditEntry:
    """An entry written ``days_ago`` days ago (inserted with its time: INSERT is the one thing allowed)."""
    entry = AuditEntry(action=Action.KB_UPDATE, at=timezone.now() - timedelta(days=days_ago), object_repr="x", **kwargs)
    entry.save()
    return entry


def _refused(sql: str, params=()) -> str:
    with pytest.raises(DatabaseError) as caught, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)
    return str(caught.value)


def test_the_database_refuses_an_update():
    entry = _entry()
    message = _refused("UPDATE audit_auditentry SET action = 'kb.create' WHERE id = %s", [entry.pk])
    assert "append-only" in message and "UPDATE" in message
    assert AuditEntry.objects.get(pk=entry.pk).action == Action.KB_UPDATE


def test_the_database_refuses_a_delete_even_of_an_old_row():
    old = _entry(days_ago=3000)
    assert "DELETE" in _refused("DELETE FROM audit_auditentry WHERE id = %s", [old.pk])
    assert AuditEntry.objects.filter(pk=old.pk).exists()


def test_the_database_refuses_truncate():
    _entry()
    assert "TRUNCATE" in _refused("TRUNCATE audit_auditentry")
    assert AuditEntry.objects.exists()


def test_setting_the_purge_marker_by_hand_cannot_delete_a_recent_row():
    """Code that sets the marker itself still cannot remove anything younger than the database's 30 days."""
    recent = _entry(days_ago=29)
    future = (timezone.now() + timedelta(days=1)).isoformat()
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('zhiku.audit_purge_before', %s, true)", [future])
        cursor.execute("DELETE FROM audit_auditentry WHERE id = %s", [recent.pk])
    assert AuditEntry.objects.filter(pk=recent.pk).exists()


def test_the_model_refuses_changes_and_deletes_in_python():
    entry = _entry()
    entry.object_repr = "changed"
    with pytest.raises(AuditImmutable):
        entry.save()
    with pytest.raises(AuditImmutable):
        entry.delete()
    with pytest.raises(AuditImmutable):
        AuditEntry.objects.filter(pk=entry.pk).delete()
    with pytest.raises(AuditImmutable):
        AuditEntry.objects.filter(pk=entry.pk).update(object_repr="changed")
    assert AuditEntry.objects.get(pk=entry.pk).object_repr == "x"


def test_deleting_the_actor_keeps_the_entry_and_its_username(make_user):
    carol = make_user("carol")
    entry = record(Action.KB_UPDATE, actor=carol, changes={"top_k": [5, 8]})
    carol.delete()
    kept = AuditEntry.objects.get(pk=entry.pk)
    assert kept.actor_id is None and kept.actor_name == "carol" and kept.changes == {"top_k": [5, 8]}


def test_purge_deletes_only_entries_past_retention(settings):
    settings.ZHIKU_AUDIT_RETENTION_DAYS = 90
    old = [_entry(days_ago=d) for d in (91, 400)]
    kept = [_entry(days_ago=d) for d in (0, 31, 89)]
    assert audit_purge() == 2
    assert not AuditEntry.objects.filter(pk__in=[e.pk for e in old]).exists()
    assert AuditEntry.objects.filter(pk__in=[e.pk for e in kept]).count() == 3
    purge = AuditEntry.objects.filter(action=Action.AUDIT_PURGE).get()
    assert purge.changes["deleted"] == 2 and purge.changes["retention_days"] == 90


def test_the_purge_permission_ends_with_its_transaction(settings):
    settings.ZHIKU_AUDIT_RETENTION_DAYS = 90
    audit_purge()
    old = _entry(days_ago=400)
    assert "DELETE" in _refused("DELETE FROM audit_auditentry WHERE id = %s", [old.pk])


def test_the_purge_command(settings, capsys):
    settings.ZHIKU_AUDIT_RETENTION_DAYS = 30
    old = _entry(days_ago=45)
    call_command("audit_purge")
    assert "deleted 1 entries" in capsys.readouterr().out
    assert not AuditEntry.objects.filter(pk=old.pk).exists()
    # The command runs outside a request: the purge's own entry says so.
    assert AuditEntry.objects.get(action=Action.AUDIT_PURGE).actor_id is None


def test_the_sweeper_purges_at_most_once_a_day(settings, monkeypatch):
    from audit import purge

    settings.ZHIKU_AUDIT_RETENTION_DAYS = 30
    monkeypatch.setitem(purge._last_purge, "at", 0.0)
    _entry(days_ago=60)
    assert purge.purge_if_due() == 1
    _entry(days_ago=60)
    assert purge.purge_if_due() == 0  # the next round the same day leaves it for tomorrow
    monkeypatch.setitem(purge._last_purge, "at", purge._last_purge["at"] - purge.PURGE_EVERY_SECONDS)
    assert purge.purge_if_due() == 1
