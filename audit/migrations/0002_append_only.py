"""The audit table is append-only in PostgreSQL itself: triggers refuse UPDATE, TRUNCATE and any DELETE but the purge's.

- UPDATE: refused, except the one change Django's ``on_delete=SET_NULL`` makes when an actor's account is
  deleted (``actor_id`` to NULL, every other column unchanged; the username stays in ``actor_name``).
- TRUNCATE: refused (a statement trigger).
- DELETE: refused unless the transaction set ``zhiku.audit_purge_before`` (``audit/purge.py``) AND the row
  is older than that AND older than ``now() - 30 days``, a floor written here that no setting moves.

Trigger functions: PostgreSQL docs, "Trigger Functions" (plpgsql-trigger) and ``current_setting(name,
missing_ok)`` / ``set_config(name, value, is_local)`` (functions-admin). docs/audit.md says what this does
and does not protect against (a role that owns the table can drop the triggers).
"""
from django.db import migrations

FORWARD = r"""
CREATE OR REPLACE FUNCTION audit_entry_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    purge_before timestamptz;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        RAISE EXCEPTION 'audit entries are append-only: TRUNCATE refused' USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF TG_OP = 'UPDATE' THEN
        IF OLD.actor_id IS NOT NULL AND NEW.actor_id IS NULL
           AND (to_jsonb(NEW) - 'actor_id') = (to_jsonb(OLD) - 'actor_id') THEN
            RETURN NEW;  -- the actor's account was deleted (ON DELETE SET NULL); nothing else changes
        END IF;
        RAISE EXCEPTION 'audit entries are append-only: UPDATE of entry % refused', OLD.id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- DELETE
    BEGIN
        purge_before := nullif(current_setting('zhiku.audit_purge_before', true), '')::timestamptz;
    EXCEPTION WHEN others THEN
        purge_before := NULL;
    END;
    IF purge_before IS NOT NULL AND OLD.at < purge_before AND OLD.at < now() - interval '30 days' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit entries are append-only: DELETE of entry % refused (only the retention purge removes entries older than 30 days)', OLD.id
        USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER audit_entry_no_update BEFORE UPDATE ON audit_auditentry
    FOR EACH ROW EXECUTE FUNCTION audit_entry_guard();
CREATE TRIGGER audit_entry_no_delete BEFORE DELETE ON audit_auditentry
    FOR EACH ROW EXECUTE FUNCTION audit_entry_guard();
CREATE TRIGGER audit_entry_no_truncate BEFORE TRUNCATE ON audit_auditentry
    FOR EACH STATEMENT EXECUTE FUNCTION audit_entry_guard();
"""

BACKWARD = r"""
DROP TRIGGER IF EXISTS audit_entry_no_truncate ON audit_auditentry;
DROP TRIGGER IF EXISTS audit_entry_no_delete ON audit_auditentry;
DROP TRIGGER IF EXISTS audit_entry_no_update ON audit_auditentry;
DROP FUNCTION IF EXISTS audit_entry_guard();
"""


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
