"""API tokens (django-rest-knox, accounts/): stored hashed, expiring, revoked with the password or the account.

Against the real database through the REST API; the websocket and SSE side is in
tests/chat/test_chat_tokens.py.
"""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.hashers import make_password
from django.db import connection
from django.utils import timezone

from accounts.models import ApiToken
from accounts.tokens import token_issue

pytestmark = pytest.mark.django_db

TOKEN = "/api/auth/token/"
TOKENS = "/api/auth/tokens/"


def error_of(response) -> dict:
    assert set(response.json()) == {"error"}, response.content
    return response.json()["error"]


def with_key(api_client, key: str):
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return api_client


def login(api_client, username: str = "alice", **extra) -> dict:
    response = api_client.post(TOKEN, {"username": username, "password": "pw-" + username, **extra}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def refused(api_client, key: str) -> dict:
    response = with_key(api_client, key).get("/api/kbs/")
    assert response.status_code == 401, response.content
    assert response["WWW-Authenticate"].startswith("Token")
    return error_of(response)


# --- stored hashed, expiring --------------------------------------------------------------

def test_the_key_is_shown_once_and_stored_only_as_its_digest(api_client, alice):
    issued = login(api_client)
    key = issued["token"]
    row = ApiToken.objects.get(pk=issued["id"])
    assert row.user == alice and len(key) == 64
    with connection.cursor() as cursor:  # every column of the stored row, as the database holds it
        cursor.execute(f"SELECT * FROM {ApiToken._meta.db_table} WHERE id = %s", [row.pk])
        stored = [str(value) for value in cursor.fetchone()]
    assert not any(key in value for value in stored)
    assert row.digest != key and len(row.digest) == 128 and key.startswith(row.token_key)
    assert with_key(api_client, key).get("/api/kbs/").status_code == 200


def test_a_token_expires_after_the_ttl_and_is_then_refused_with_the_error_shape(api_client, alice):
    issued = login(api_client)
    expiry = datetime.fromisoformat(issued["expiry"])
    ttl = timedelta(days=django_settings.ZHIKU_TOKEN_TTL_DAYS)
    assert abs(expiry - (timezone.now() + ttl)) < timedelta(minutes=1)
    ApiToken.objects.filter(pk=issued["id"]).update(expiry=timezone.now() - timedelta(seconds=1))

    assert refused(api_client, issued["token"])["code"] == "authentication_failed"
    assert not ApiToken.objects.filter(pk=issued["id"]).exists()  # deleted when presented expired


def test_each_login_issues_another_token_and_the_oldest_unused_goes_past_the_limit(api_client, alice, settings):
    settings.ZHIKU_TOKEN_LIMIT_PER_USER = 3
    first, second, third = (login(api_client, name=f"client {i}") for i in range(3))
    with_key(api_client, first["token"]).get("/api/kbs/")  # used: the least recently used is now the second
    fourth = login(api_client)
    live = set(ApiToken.objects.filter(user=alice).values_list("id", flat=True))
    assert live == {first["id"], third["id"], fourth["id"]}
    assert refused(api_client, second["token"])["code"] == "authentication_failed"


@pytest.mark.parametrize("key", ["x" * 64, "0" * 19, "ab\x00cd" * 8, "é" * 40, "f" * 129, "'; DROP TABLE x; --" + "a" * 40])
def test_a_malformed_key_is_a_401_not_a_server_error(api_client, alice, key):
    token_issue(user=alice)
    assert refused(api_client, key)["code"] == "authentication_failed"


# --- revoked with the credentials ------------------------------------------------------------

def test_a_password_change_revokes_every_token_of_that_user_only(api_client, alice, bob):
    mine, theirs = login(api_client)["token"], login(api_client, "bob")["token"]
    alice.set_password("a new password")
    alice.save()
    assert refused(api_client, mine)["code"] == "authentication_failed"
    assert with_key(api_client, theirs).get("/api/kbs/").status_code == 200
    assert api_client.post(TOKEN, {"username": "alice", "password": "a new password"}, format="json").status_code == 200


def test_a_password_hash_written_directly_revokes_too(api_client, alice):
    key = login(api_client)["token"]
    alice.password = make_password("another")
    alice.save(update_fields=["password"])
    assert refused(api_client, key)["code"] == "authentication_failed"


def test_a_rehash_of_the_same_password_at_login_revokes_nothing(api_client, alice, settings):
    key = login(api_client)["token"]
    old_hash = alice.password
    # A stronger hasher first: the next login re-hashes the same password and saves it.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher",
                                 "django.contrib.auth.hashers.MD5PasswordHasher"]
    login(api_client)
    alice.refresh_from_db()
    assert alice.password != old_hash and alice.password.startswith("pbkdf2_")
    assert with_key(api_client, key).get("/api/kbs/").status_code == 200


def test_deactivation_revokes_and_reactivation_does_not_bring_the_tokens_back(api_client, alice):
    key = login(api_client)["token"]
    alice.is_active = False
    alice.save()
    assert not ApiToken.objects.filter(user=alice).exists()
    alice.is_active = True
    alice.save()
    assert refused(api_client, key)["code"] == "authentication_failed"


def test_saving_a_user_for_other_reasons_keeps_the_tokens(api_client, alice):
    key = login(api_client)["token"]
    alice.first_name = "爱丽丝"
    alice.save()
    alice.save(update_fields=["last_login"])
    assert with_key(api_client, key).get("/api/kbs/").status_code == 200


# --- the owner's list and revocation ------------------------------------------------------------

def test_the_owner_lists_their_tokens_without_keys_and_revokes_one_or_all(api_client, alice, bob):
    laptop = login(api_client, name="laptop")
    script = login(api_client, name="script")
    bobs = login(api_client, "bob")
    with_key(api_client, laptop["token"])

    listed = api_client.get(TOKENS)
    assert listed.status_code == 200
    rows = listed.json()["results"]
    assert [r["name"] for r in rows] == ["script", "laptop"]  # newest first, only the caller's
    assert {r["id"]: r["current"] for r in rows} == {script["id"]: False, laptop["id"]: True}
    assert set(rows[0]) == {"id", "name", "key_prefix", "created", "expiry", "last_used", "current"}
    assert laptop["token"].startswith(rows[1]["key_prefix"]) and len(rows[1]["key_prefix"]) == 8
    assert laptop["token"] not in listed.content.decode() and script["token"] not in listed.content.decode()
    assert rows[1]["last_used"] is not None and rows[0]["last_used"] is None

    assert api_client.delete(f"{TOKENS}{bobs['id']}/").status_code == 404  # another user's: not found
    assert error_of(api_client.delete(f"{TOKENS}{bobs['id']}/"))["code"] == "token_not_found"
    assert api_client.delete(f"{TOKENS}{script['id']}/").status_code == 204
    assert refused(api_client, script["token"])["code"] == "authentication_failed"

    with_key(api_client, laptop["token"])
    assert api_client.delete(TOKENS).json() == {"revoked": 1}
    assert refused(api_client, laptop["token"])["code"] == "authentication_failed"
    assert with_key(api_client, bobs["token"]).get("/api/kbs/").status_code == 200


def test_a_signed_in_browser_lists_the_users_tokens_too(client, alice):
    token_issue(user=alice, name="cli")
    client.force_login(alice)
    rows = client.get(TOKENS).json()["results"]
    assert [(r["name"], r["current"]) for r in rows] == [("cli", False)]


# --- plaintext keys of before, moved into the hashed store -------------------------------------------

def test_the_migration_moves_plaintext_keys_into_the_hashed_store_and_drops_them(api_client, alice):
    from importlib import import_module

    from django.apps import apps

    migration = import_module("accounts.migrations.0002_move_plaintext_tokens")
    old_key = "0123456789abcdef0123456789abcdef01234567"  # DRF authtoken's shape: 40 hex characters
    created = timezone.now() - timedelta(days=400)
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, created timestamptz NOT NULL, "
                       "user_id integer NOT NULL)")
        cursor.execute("INSERT INTO authtoken_token VALUES (%s, %s, %s)", [old_key, created, alice.pk])
    with connection.schema_editor() as editor:
        migration.move_plaintext_tokens(apps, editor)

    assert "authtoken_token" not in connection.introspection.table_names()
    moved = ApiToken.objects.get(user=alice)
    assert moved.digest != old_key and moved.created == created
    assert moved.expiry > timezone.now() + timedelta(days=django_settings.ZHIKU_TOKEN_TTL_DAYS - 1)
    assert with_key(api_client, old_key).get("/api/kbs/").status_code == 200  # the client keeps working
    alice.set_password("changed")
    alice.save()
    assert refused(api_client, old_key)["code"] == "authentication_failed"


def test_the_admin_lists_tokens_by_owner_without_their_keys(client, alice, make_user):
    key = token_issue(user=alice, name="laptop")[1]
    client.force_login(make_user("root", superuser=True))
    page = client.get("/admin/accounts/apitoken/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "laptop" in html and key[:8] in html and key not in html
    assert client.get("/admin/accounts/apitoken/add/").status_code == 403  # keys are issued to their owner only


def test_bootstrap_prints_a_new_admin_token_at_each_start_and_revokes_the_previous_one(api_client, settings, tmp_path):
    import io
    import re

    from django.core.management import call_command

    settings.VAR_DIR = tmp_path
    keys = []
    for _ in range(2):
        out = io.StringIO()
        call_command("bootstrap", "--no-demo", stdout=out)
        keys.append(re.search(r"API token: ([0-9a-f]{64})", out.getvalue()).group(1))
    assert refused(api_client, keys[0])["code"] == "authentication_failed"
    assert with_key(api_client, keys[1]).get("/api/kbs/").status_code == 200
    assert ApiToken.objects.filter(user__username="admin").count() == 1
