"""Local passwords, refused in SSO-only mode (``ZHIKU_SSO_ONLY``) for everyone but the break-glass accounts.

Every password sign-in goes through ``authenticate``: the console's form, the admin's, and the API's
token endpoint (accounts/api/auth.py), so one check here covers them all.
"""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth.backends import ModelBackend


def password_allowed(username: str | None) -> bool:
    """Whether ``username`` may sign in with a password kept in zhiku's database."""
    if not settings.ZHIKU_SSO_ONLY:
        return True
    return bool(username) and username in settings.ZHIKU_SSO_BREAK_GLASS


class PasswordBackend(ModelBackend):
    """Django's ModelBackend, answering None for a password sign-in that SSO-only mode turns off."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        name = kwargs.get("username", username)
        if not password_allowed(name):
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
