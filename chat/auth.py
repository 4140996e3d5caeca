"""Websocket authentication by API token: ``/ws/chat/?token=<key>`` (accounts/auth.py), after the session's user."""
from __future__ import annotations

from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware


@database_sync_to_async
def user_for_token(key: str):
    """The active user owning the live API token ``key`` (not expired, not revoked), else AnonymousUser."""
    from accounts.auth import user_for_key

    return user_for_key(key)


class TokenAuthMiddleware(BaseMiddleware):
    """Sets ``scope["user"]`` from a ``token`` query parameter.

    Placed inside ``AuthMiddlewareStack``, so a connection without a token keeps
    its session user; a connection with a wrong token is anonymous (it never
    falls back to the session).
    """

    async def __call__(self, scope, receive, send):
        query = parse_qs(scope.get("query_string", b"").decode("latin1"))
        keys = query.get("token")
        if keys:
            scope = dict(scope)
            scope["user"] = await user_for_token(keys[0][:100])
        return await super().__call__(scope, receive, send)


def TokenAuthMiddlewareStack(inner):  # noqa: N802 - named like channels' AuthMiddlewareStack
    """Session (cookie) authentication, then the token: ``AuthMiddlewareStack(TokenAuthMiddleware(inner))``."""
    from channels.auth import AuthMiddlewareStack

    return AuthMiddlewareStack(TokenAuthMiddleware(inner))
