"""Issuing, listing and revoking API tokens (django-rest-knox's hashed store, ``accounts.models.ApiToken``).

``token_issue`` is the only place a key exists in clear: it is returned once, to the caller
that asked for it, and only its digest is kept. A user holds at most
``ZHIKU_TOKEN_LIMIT_PER_USER`` live tokens; issuing one more revokes the least recently
used. Expired tokens are deleted by knox when presented, and here whenever their owner is
issued a new one.
"""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone
from knox.settings import knox_settings

from accounts.models import ApiToken

# last_used is written at most once a minute per token: a busy client costs no write per request.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def tokens_live(*, user) -> QuerySet[ApiToken]:
    """The user's tokens that have not expired, newest first."""
    now = timezone.now()
    return ApiToken.objects.filter(Q(expiry__isnull=True) | Q(expiry__gt=now), user=user).order_by("-created", "-id")


def token_issue(*, user, name: str = "", replace_named: bool = False) -> tuple[ApiToken, str]:
    """A new token for ``user`` and its key (the only time the key is known).

    ``replace_named``: revoke the user's earlier tokens of the same ``name`` first
    (bootstrap's token for the local admin is replaced at every start, not piled up).
    """
    with transaction.atomic():
        # The user's row is the lock: two logins at once cannot both pass the limit.
        list(type(user)._default_manager.select_for_update().filter(pk=user.pk).values_list("pk", flat=True))
        ApiToken.objects.filter(user=user, expiry__lte=timezone.now()).delete()
        if replace_named:
            ApiToken.objects.filter(user=user, name=name).delete()
        limit = settings.ZHIKU_TOKEN_LIMIT_PER_USER
        live = list(tokens_live(user=user).order_by(F("last_used").desc(nulls_last=True), "-created", "-id")
                    .values_list("id", flat=True))
        if len(live) >= limit:
            ApiToken.objects.filter(id__in=live[limit - 1:]).delete()
        return ApiToken.objects.create(user=user, expiry=knox_settings.TOKEN_TTL, name=name[:100])


def token_revoke(*, user, token_id: int) -> bool:
    """Revoke one of ``user``'s tokens; False when they hold no token ``token_id``."""
    deleted, _ = ApiToken.objects.filter(user=user, id=token_id).delete()
    return deleted > 0


def tokens_revoke_all(*, user) -> int:
    """Revoke every token of ``user``; how many there were."""
    deleted, _ = ApiToken.objects.filter(user=user).delete()
    return deleted


def token_touch(token: ApiToken) -> None:
    """Record that ``token`` authenticated a request now (at most one write a minute)."""
    now = timezone.now()
    if token.last_used is None or now - token.last_used >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used=now)
        token.last_used = now
