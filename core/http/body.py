"""A JSON request body read against its route's limit; each caller answers 413 in its own protocol's shape.

config/body_limits.py refuses bodies over a route family's limit before the application sees them (under
daphne); these are the views' own checks, which also hold for their smaller limits and under other servers.
"""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from core import safejson


def body_over_limit(request: HttpRequest, limit: int) -> int | None:
    """The declared ``Content-Length`` when it is over ``limit`` (refuse before reading the body), else None."""
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if declared.isdigit() and int(declared) > limit:
        return int(declared)
    return None


def json_body(request: HttpRequest, limit: int) -> Any:
    """The body parsed by ``core.safejson.loads`` within ``limit`` bytes (an empty body is None).

    Raises its ApplicationErrors: ``body_too_large`` (413), ``invalid_json``, ``json_too_deep``,
    ``invalid_characters`` (400).
    """
    return safejson.loads(request.body or b"null", limit_bytes=limit)
