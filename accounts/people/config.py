"""People settings read from the environment: invitations, the user picker, e-mail (Django's EMAIL_* settings).

Imported by config/settings.py (``from accounts.people.config import *``), so it imports no model. E-mail is
on when ``EMAIL_HOST`` or ``DJANGO_EMAIL_BACKEND`` is set (docs/people.md); otherwise invitation and reset
links are only shown to whoever made them.
"""
from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from core.env import env_bool, env_int

# --- invitations ---------------------------------------------------------------------------------------
# How long an invitation link lives when its maker gives no expiry, and the longest it may live (days).
ZHIKU_INVITATION_DAYS = env_int("ZHIKU_INVITATION_DAYS", 7)
ZHIKU_INVITATION_MAX_DAYS = env_int("ZHIKU_INVITATION_MAX_DAYS", 30)
if not 1 <= ZHIKU_INVITATION_DAYS <= ZHIKU_INVITATION_MAX_DAYS:
    raise ImproperlyConfigured("ZHIKU_INVITATION_DAYS must be from 1 to ZHIKU_INVITATION_MAX_DAYS.")

# --- the user picker ----------------------------------------------------------------------------------
# The most people and groups one search answers (GET /api/people/search/).
ZHIKU_PEOPLE_SEARCH_LIMIT = env_int("ZHIKU_PEOPLE_SEARCH_LIMIT", 10)
if not 1 <= ZHIKU_PEOPLE_SEARCH_LIMIT <= 50:
    raise ImproperlyConfigured("ZHIKU_PEOPLE_SEARCH_LIMIT must be from 1 to 50.")
# Searches a minute one non-staff person may make (DRF's throttle syntax, "N/min"): typing into the picker makes
# a few; rebuilding a hidden address letter by letter takes hundreds. Staff are not limited.
ZHIKU_PEOPLE_SEARCH_RATE = os.environ.get("ZHIKU_PEOPLE_SEARCH_RATE", "30/min").strip()

# --- e-mail (Django's own settings) ------------------------------------------------------------------------
_backend = os.environ.get("DJANGO_EMAIL_BACKEND", "").strip()
EMAIL_HOST = os.environ.get("EMAIL_HOST", "").strip() or "localhost"
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "").strip() or "zhiku@localhost"
EMAIL_BACKEND = _backend or "django.core.mail.backends.smtp.EmailBackend"
# Whether the platform sends invitations and reset links by e-mail at all.
ZHIKU_EMAIL_ENABLED = bool(_backend or os.environ.get("EMAIL_HOST", "").strip())
