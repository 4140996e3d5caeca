"""The console's API tokens page: a signed-in person's tokens, and creating and revoking them (accounts/tokens.py).

The page renders the list; creating and revoking go through the REST API (``/api/auth/tokens/``) from
static/zhiku/tokens.js with the session and its CSRF token, so the key exists only in the API's one answer
and in the page that asked for it, never in a session, a log or a redirect.
"""
from __future__ import annotations

import math

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext, ngettext
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import ensure_csrf_cookie

from accounts.tokens import lifetime_choices, tokens_live


def _lifetime_label(days: int | None) -> str:
    if days is None:
        return gettext("Never expires")
    return ngettext("%(days)s day", "%(days)s days", days) % {"days": days}


@login_required
@ensure_csrf_cookie
@never_cache
def tokens_page(request: HttpRequest) -> HttpResponse:
    """API 令牌: the caller's live tokens (name, key prefix, created, expiry, last used), a form to create one."""
    choices = lifetime_choices()
    default = math.ceil(settings.ZHIKU_TOKEN_TTL_DAYS)
    return render(request, "accounts/tokens.html", {
        "tokens": list(tokens_live(user=request.user)[:settings.ZHIKU_TOKEN_LIMIT_PER_USER]),
        "lifetimes": [{"value": "" if d is None else d, "label": _lifetime_label(d), "default": d == default}
                      for d in choices],
        "limit": settings.ZHIKU_TOKEN_LIMIT_PER_USER,
    })
