"""Issuing, listing and revoking API tokens (django-rest-knox's hashed store, ``accounts.models.ApiToken``).

``token_issue`` is the only place a key exists in clear: it is returned once, to the caller
that asked for it, and only its digest is kept. A user holds at most
``ZHIKU_TOKEN_LIMIT_PER_USER`` live tokens; issuing one more revokes the least recently
used. Expired tokens are deleted by knox when presented, and here whenever their owner is
issued a new one. A token lives ``ZHIKU_TOKEN_TTL_DAYS`` unless its owner chose a lifetime
(``token_lifetime``: whole days up to ``ZHIKU_TOKEN_MAX_DAYS``, or never where that is 0).
"""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone
from knox.settings import knox_settings

from accounts.errors import AccountsError
from accounts.models import ApiToken
from core.errors import fail
from core.last_used import touch_last_used

# The lifetimes the tokens page offers (days), those within ZHIKU_TOKEN_MAX_DAYS.
LIFETIME_CHOICES_DAYS = (7, 30, 90, 365)
# token_issue's lifetime when none is given: the site's ZHIKU_TOKEN_TTL_DAYS (knox's TOKEN_TTL).
DEFAULT_LIFETIME = object()


def lifetime_choices() -> list[int | None]:
    """The lifetimes (days; None: never expires) a person may pick, shortest first."""
    limit = settings.ZHIKU_TOKEN_MAX_DAYS
    days = sorted({d for d in LIFETIME_CHOICES_DAYS if not limit or d <= limit} | ({limit} if limit else set()))
    return [*days, *([None] if not limit else [])]


def token_lifetime(days: int | None) -> timedelta | None:
    """The lifetime of ``days`` (None: never expires), refused with ``invalid_expiry`` outside the site's limit."""
    limit = settings.ZHIKU_TOKEN_MAX_DAYS
    if days is None:
        if limit:
            raise fail(AccountsError.INVALID_EXPIRY, "never", limit=limit)
        return None
    if isinstance(days, bool) or not isinstance(days, int) or days < 1 or (limit and days > limit):
        raise fail(AccountsError.INVALID_EXPIRY, limit=limit) if limit else fail(AccountsError.INVALID_EXPIRY, "unlimited")
    return timedelta(days=days)


def tokens_live(*, user) -> QuerySet[ApiToken]:
    """The user's tokens that have not expired, newest first."""
    now = timezone.now()
    return ApiToken.objects.filter(Q(expiry__isnull=True) | Q(expiry__gt=now), user=user).order_by("-created", "-id")


def token_issue(*, user, name: str = "", replace_named: bool = False,
                lifetime: timedelta | None | object = DEFAULT_LIFETIME) -> tuple[ApiToken, str]:
    """A new token for ``user`` and its key (the only time the key is known).

    ``replace_named``: revoke the user's earlier tokens of the same ``name`` first
    (bootstrap's token for the local admin is replaced at every start, not piled up).
    ``lifetime``: from ``token_lifetime`` (None: never expires); by default ZHIKU_TOKEN_TTL_DAYS.
    """
    with transaction.atomic():
        # The user's row is the lock: two logins at once cannot both pass the limit.
        list(user._meta.model._default_manager.select_for_update().filter(pk=user.pk).values_list("pk", flat=True))
        ApiToken.objects.filter(user=user, expiry__lte=timezone.now()).delete()
        if replace_named:
            ApiToken.objects.filter(user=user, name=name).delete()
        limit = settings.ZHIKU_TOKEN_LIMIT_PER_USER
        live = list(tokens_live(user=user).order_by(F("last_used").desc(nulls_last=True), "-created", "-id")
                    .values_list("id", flat=True))
        if len(live) >= limit:
            ApiToken.objects.filter(id__in=live[limit - 1:]).delete()
        expiry = knox_settings.TOKEN_TTL if lifetime is DEFAULT_LIFETIME else lifetime
        return ApiToken.objects.create(user=user, expiry=expiry, name=name[:100])


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
    touch_last_used(token, field="last_used")
