"""Token authentication: django-rest-knox's, for DRF views, the SSE chat and the chat websocket.

``Authorization: Token <key>`` (knox's ``AUTH_HEADER_PREFIX``) for HTTP, ``?token=<key>`` for
the websocket (``chat/auth.py``); both end in ``TokenAuthentication.authenticate_credentials``,
which refuses an unknown, expired (deleted on sight) or revoked key and an inactive user.
``user_for_key`` and ``user_for_session`` answer who sends a request before Django reads it
(config/body_limits.py: only a signed-in request may send a file-sized body).
"""
from __future__ import annotations

import re
from importlib import import_module

from django.conf import settings
from django.contrib.auth import get_user
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from knox.auth import TokenAuthentication as KnoxTokenAuthentication
from rest_framework import exceptions

from accounts.tokens import token_touch

# Keys are hex (knox's, and the 40-character DRF keys moved into the hashed store by
# accounts/migrations/0002); anything else is refused before it reaches a query or a hash.
KEY_PATTERN = re.compile(r"[0-9a-fA-F]{20,128}")


class TokenAuthentication(KnoxTokenAuthentication):
    """knox's authentication, refusing malformed keys with a 401 and recording ``last_used``."""

    def authenticate_credentials(self, token: bytes):
        try:
            key = token.decode("ascii")
        except UnicodeDecodeError:
            key = ""
        if not KEY_PATTERN.fullmatch(key):
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        user, auth_token = super().authenticate_credentials(key.encode())
        token_touch(auth_token)
        return user, auth_token


def user_for_key(key: str):
    """The active user whose live token ``key`` is, else AnonymousUser (synchronous: database access)."""
    try:
        user, _token = TokenAuthentication().authenticate_credentials(key.encode("utf-8", "replace"))
    except exceptions.AuthenticationFailed:
        return AnonymousUser()
    return user


def user_for_session(session_key: str):
    """The active user signed in with session ``session_key``, else AnonymousUser (synchronous: database access).

    As ``django.contrib.auth.get_user`` decides for a request carrying the cookie: a live session, its backend,
    and the session hash of the user's current password (a password set since ends the session)."""
    request = HttpRequest()
    request.session = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    user = get_user(request)
    return user if user.is_authenticated and user.is_active else AnonymousUser()
