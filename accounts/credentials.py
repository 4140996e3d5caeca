"""Every credential a person signs in with, ended at once when their access ends (accounts/signals.py decides when).

What ends: their API tokens (accounts/tokens.py) and what MCP clients hold in their name through OAuth
(django-oauth-toolkit's rows, assistants/mcp_auth/): access tokens, refresh tokens and authorization codes not yet
exchanged. All are deleted, not marked: a token or code presented afterwards is unknown (``401 token_invalid`` at
``/mcp/``, ``invalid_grant`` at ``/oauth/token/``), so re-activating the account cannot bring one back. Browser
sessions end with a new password by Django's own check (each session keeps an HMAC of the password hash,
``get_session_auth_hash``); a deactivation deletes them here (``sessions=True``), since nothing in them changes and
re-activating the account would sign those browsers in again. Assistant and KB keys are the integrations'
credentials, refused while their creator is inactive (assistants/keys.py), not deleted (docs/production.md, "What
ends each credential").
"""
from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import SESSION_KEY, get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.sessions.models import Session
from django.db import transaction
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_grant_model, get_refresh_token_model

from accounts.tokens import tokens_revoke_all


@dataclass(frozen=True)
class Revoked:
    api_tokens: int
    access_tokens: int
    refresh_tokens: int
    codes: int
    sessions: int


def holder_lock(user_pk: int, *, active: bool = False) -> bool:
    """Lock the user's row until the transaction ends; whether it exists (and, with ``active``, is active).

    The one lock both sides take: ``credentials_revoke_all`` before it deletes, and the OAuth token endpoint before it
    issues (assistants/mcp_auth/oauth.py). So an exchange under way when a password is set either finishes first and
    its new tokens are deleted here, or starts after and finds its refresh token or code gone."""
    rows = get_user_model()._default_manager.select_for_update().filter(pk=user_pk)
    if active:
        rows = rows.filter(is_active=True)
    return bool(list(rows.values_list("pk", flat=True)))


def credentials_revoke_all(*, user, sessions: bool = False) -> Revoked:
    """Delete every API token, OAuth access and refresh token and outstanding authorization code of ``user``, and
    with ``sessions`` their browser sessions (``sessions_end``)."""
    with transaction.atomic():
        holder_lock(user.pk)
        api = tokens_revoke_all(user=user)
        # Each count is its own model's: the toolkit's links between them are SET_NULL (a refresh token's access
        # token, an access token's source refresh token), so no delete cascades into another's rows.
        access, _ = get_access_token_model().objects.filter(user=user).delete()
        refresh, _ = get_refresh_token_model().objects.filter(user=user).delete()
        codes, _ = get_grant_model().objects.filter(user=user).delete()
    ended = sessions_end(user=user) if sessions else 0
    return Revoked(api_tokens=api, access_tokens=access, refresh_tokens=refresh, codes=codes, sessions=ended)


def sessions_end(*, user) -> int:
    """Delete ``user``'s signed-in browser sessions; how many there were.

    Sessions live in PostgreSQL (``django.contrib.sessions``' database store), signed and not indexed by user: each
    live one is decoded to find whose it is, a chunk at a time. That is a scan of the table, paid only when an account
    is deactivated (docs/production.md gives its cost)."""
    store, pk, mine = SessionStore(), str(user.pk), []
    live = Session.objects.filter(expire_date__gt=timezone.now()).values_list("session_key", "session_data")
    for key, data in live.iterator(chunk_size=2000):
        if store.decode(data).get(SESSION_KEY) == pk:
            mine.append(key)
    deleted, _ = Session.objects.filter(pk__in=mine).delete()
    return deleted
