"""Who is asking, and what a locked-out login gets back.

``client_address(request)`` is the one place that decides a request's client address; every throttle
(django-axes for the login pages and the token endpoint, the token endpoint's DRF throttle) goes through it.
``X-Forwarded-For`` is trusted only as far as ``ZHIKU_TRUSTED_PROXIES`` says: with 0 (the default) it is
ignored; with N proxies, each appending the address it saw, the client is the Nth address from the right
(the leftmost ones are whatever the client chose to send).
"""
from __future__ import annotations

import ipaddress
import math
from datetime import timedelta

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.utils.translation import gettext_lazy

LOCKOUT_CODE = "too_many_attempts"
LOCKOUT_MESSAGE = gettext_lazy("Too many failed login attempts; try again later.")


def _valid_ip(value: str | None) -> str | None:
    if not value:
        return None
    value = value.strip()
    # "[::1]:1234" / "1.2.3.4:5678" as some proxies write them.
    if value.startswith("[") and "]" in value:
        value = value[1:value.index("]")]
    elif value.count(":") == 1:
        value = value.split(":", 1)[0]
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        return None


def client_address(request: object) -> str:
    """The client's address: REMOTE_ADDR, or the Nth X-Forwarded-For entry from the right with N trusted proxies."""
    meta = getattr(request, "META", {})
    remote = _valid_ip(meta.get("REMOTE_ADDR")) or "0.0.0.0"
    proxies = int(getattr(settings, "ZHIKU_TRUSTED_PROXIES", 0) or 0)
    if proxies <= 0:
        return remote
    forwarded = [part.strip() for part in meta.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if len(forwarded) < proxies:
        # Fewer hops than proxies: the request did not come through all of them. The
        # header cannot be trusted, and the connection's address is all we know.
        return remote
    return _valid_ip(forwarded[-proxies]) or remote


def lockout_cooloff(request: object = None) -> timedelta:
    """AXES_COOLOFF_TIME: how long a lockout lasts (ZHIKU_LOGIN_COOLOFF_MINUTES)."""
    return timedelta(minutes=settings.ZHIKU_LOGIN_COOLOFF_MINUTES)


def lockout_response(request: HttpRequest, original_response: HttpResponse | None = None,
                     credentials: object = None) -> HttpResponse:
    """django-axes' AXES_LOCKOUT_CALLABLE: the API's error shape under /api/, a page elsewhere (both 429)."""
    retry_after = max(1, math.ceil(lockout_cooloff().total_seconds()))
    response: HttpResponse
    if request.path.startswith("/api/"):
        response = JsonResponse(
            {"error": {"code": LOCKOUT_CODE, "message": str(LOCKOUT_MESSAGE), "retry_after": retry_after}}, status=429
        )
    else:
        html = render_to_string(
            "registration/locked_out.html",
            {"minutes": settings.ZHIKU_LOGIN_COOLOFF_MINUTES, "message": LOCKOUT_MESSAGE},
            request=request,
        )
        response = HttpResponse(html, status=429)
    response["Retry-After"] = str(retry_after)
    return response
