"""Who is acting, from where: the request an audit entry is written in, carried in a context variable.

``AuditContextMiddleware`` puts the request in ``current_request`` for the time of the request; the actor is
read from ``request.user`` only when an entry is written, so a DRF token authentication (which sets the user
in the view, after the middleware ran) is seen too. The address is ``core.http.security.client_address``, the
one place that decides a client's address (``ZHIKU_TRUSTED_PROXIES``). Outside a request the origin is
``cli`` in a management command and ``system`` elsewhere (workers, the sweeper), with no actor unless
``acting`` names one.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest

from core.http.security import client_address

current_request: ContextVar[Any] = ContextVar("audit_request", default=None)


@dataclass(frozen=True)
class Acting:
    actor: Any = None
    address: str | None = None
    origin: str | None = None


_acting: ContextVar[Acting | None] = ContextVar("audit_acting", default=None)
# "cli" in a management command (other than the servers), else "system"; see detect_process_origin.
_process_origin = "system"
SERVER_COMMANDS = {"runserver", "daphne", "runworker", "celery"}


def detect_process_origin(argv: list[str] | None = None) -> str:
    """Mark this process a command-line one when it runs ``manage.py <command>`` (not a server)."""
    global _process_origin
    argv = sys.argv if argv is None else argv
    is_command = bool(argv) and argv[0].endswith("manage.py") and len(argv) > 1 and argv[1] not in SERVER_COMMANDS
    _process_origin = "cli" if is_command else "system"
    return _process_origin


class AuditContextMiddleware:
    """Keeps the request in ``current_request`` while it is handled (after AuthenticationMiddleware).

    Sync and async alike, so an async view (the SSE streams) is not pushed through a thread for it
    (docs.djangoproject.com/en/5.2/topics/http/middleware/#asynchronous-support).
    """

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if iscoroutinefunction(self):
            return self._acall(request)
        token = current_request.set(request)
        try:
            return self.get_response(request)
        finally:
            current_request.reset(token)

    async def _acall(self, request: HttpRequest) -> Any:
        token = current_request.set(request)
        try:
            return await self.get_response(request)
        finally:
            current_request.reset(token)


@contextmanager
def acting(*, actor: Any = None, address: str | None = None, origin: str | None = None) -> Iterator[None]:
    """Entries written inside are by ``actor`` from ``address`` (for work done on someone's behalf off a request)."""
    token = _acting.set(Acting(actor=actor, address=address, origin=origin))
    try:
        yield
    finally:
        _acting.reset(token)


def _authenticated(user: Any) -> Any:
    return user if user is not None and getattr(user, "is_authenticated", False) else None


def who(request: object | None = None) -> tuple[Any, str | None, str]:
    """(actor or None, client address or None, origin) for an entry written now, ``request`` if one is given."""
    explicit = _acting.get()
    request = request if request is not None else current_request.get()
    if explicit is not None and request is None:
        return explicit.actor, explicit.address, explicit.origin or _process_origin
    if request is None:
        return None, None, _process_origin
    # Django's HttpRequest, or DRF's Request wrapping one (its user is set on both).
    raw = getattr(request, "_request", request)
    actor = explicit.actor if explicit is not None and explicit.actor is not None else _authenticated(
        getattr(raw, "user", None))
    return actor, client_address(raw), "web"
