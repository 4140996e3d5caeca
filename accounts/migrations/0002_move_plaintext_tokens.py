"""Move DRF authtoken's plaintext keys into the hashed store, then drop the plaintext table.

An installation that ran before django-rest-knox kept its API keys in clear in
``authtoken_token``. Each key becomes an ``ApiToken`` with the same owner and creation time,
stored as knox stores a key (its SHA-512 digest and its first 15 characters), expiring
``ZHIKU_TOKEN_TTL_DAYS`` from now, so existing clients keep working until then. The plaintext
table, its migration records and its content type are removed. A fresh database has no such
table and nothing is done. Irreversible by design: the keys are no longer known.
"""
from django.conf import settings
from django.db import migrations
from django.utils import timezone
from knox.crypto import hash_token
from knox.settings import CONSTANTS

PLAINTEXT_TABLE = "authtoken_token"
MOVED_NAME = "moved from the plaintext store"


def move_plaintext_tokens(apps, schema_editor):
    connection = schema_editor.connection
    if PLAINTEXT_TABLE not in connection.introspection.table_names():
        return
    table = apps.get_model("accounts", "ApiToken")._meta.db_table
    expiry = timezone.now() + settings.REST_KNOX["TOKEN_TTL"]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT key, user_id, created FROM {PLAINTEXT_TABLE}")
        rows = [(hash_token(key), key[: CONSTANTS.TOKEN_KEY_LENGTH], user_id, created, expiry, MOVED_NAME)
                for key, user_id, created in cursor.fetchall()]
        cursor.executemany(
            f"INSERT INTO {table} (digest, token_key, user_id, created, expiry, name) VALUES (%s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (digest) DO NOTHING", rows,
        )
        cursor.execute(f"DROP TABLE {PLAINTEXT_TABLE}")
        cursor.execute("DELETE FROM django_migrations WHERE app = %s", ["authtoken"])
    apps.get_model("contenttypes", "ContentType").objects.filter(app_label="authtoken").delete()


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.RunPython(move_plaintext_tokens, reverse_code=migrations.RunPython.noop),
    ]
