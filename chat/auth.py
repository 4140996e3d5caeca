"""Websocket authentication by API token: ``/ws/chat/?token=<key>`` (DRF authtoken), after the session's user."""
from __future__ import annotations

from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware
from django.contrib.auth.models import AnonymousUser


@database_sync_to_async
def user_for_token(key: str):
    """The active user owning the API token ``key``, else AnonymousUser."""
    from rest_framework.authtoken.models import Token

    try:
        token = Token.objects.select_related("user").get(key=key)
    except (Token.DoesNotExist, ValueError):
        return AnonymousUser()
    return token.user if token.user.is_active else AnonymousUser()


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
