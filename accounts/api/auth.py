"""Sign-in for API clients: a username and password exchanged for a token, rate-limited and locked out by django-axes."""
from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth import authenticate
from django.db import transaction
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.throttling import AnonRateThrottle
from rest_framework.views import APIView

from accounts.api import token_serializers as ts
from accounts.errors import AccountsError
from accounts.tokens import DEFAULT_LIFETIME, token_issue, token_lifetime
from core.api.inputs import parse
from core.api.parsers import SafeJSONParser
from core.audit import Action, record
from core.errors import fail
from core.http.security import LOCKOUT_MESSAGE, client_address, lockout_cooloff

logger = logging.getLogger(__name__)


class TokenThrottle(AnonRateThrottle):
    """Caps requests per client address (``core.http.security.client_address``), whatever the global throttle settings.

    Password guessing is stopped by django-axes (per account and per address, in the
    database); this rate limit only bounds the work one address can cause. It lives
    in the cache, so when the cache is unreachable it steps aside rather than fail the login.
    """

    scope = "token"

    def get_rate(self):
        return settings.ZHIKU_TOKEN_RATE

    def get_ident(self, request):
        return client_address(request)

    def allow_request(self, request, view):
        try:
            return super().allow_request(request, view)
        except Exception:  # any cache failure (Redis down, timeout)
            logger.warning("token throttle: cache unavailable, rate limit skipped", exc_info=True)
            return True


class TooManyAttempts(exceptions.Throttled):
    """A login refused by django-axes: the account or the client address is locked out."""

    default_code = "too_many_attempts"

    def __init__(self):
        exceptions.APIException.__init__(self, LOCKOUT_MESSAGE, self.default_code)
        self.wait = max(1, int(lockout_cooloff().total_seconds()))


class TokenView(APIView):
    """Exchange a username and password for a new API token (hashed at rest, expiring; accounts/tokens.py)."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [TokenThrottle]
    parser_classes = [SafeJSONParser, FormParser, MultiPartParser]

    @extend_schema(summary=_("Sign in with a username and password for a new API token"),
        request=ts.TokenInput,
        responses={200: ts.TokenOutput},
        auth=[],
        description="Each call issues a new token (a user may hold several: one per client); the key is shown "
        "this once and stored only hashed. It expires after ZHIKU_TOKEN_TTL_DAYS (default 30), or `expires_in_days`, "
        "and is revoked "
        "when the user's password changes or the account is deactivated; a user holds at most "
        "ZHIKU_TOKEN_LIMIT_PER_USER live tokens (the least recently used is revoked for a new one). "
        "Failed attempts are counted per account and per client address; after "
        "ZHIKU_LOGIN_FAILURE_LIMIT of them the account (or address) is refused with 429 "
        "`too_many_attempts`, even with the right password, for ZHIKU_LOGIN_COOLOFF_MINUTES.",
    )
    def post(self, request):
        data = parse(ts.TokenInput, request.data)
        # The plain HttpRequest: django-axes records the attempt on it, as for the login pages.
        http_request = request._request
        user = authenticate(http_request, username=data["username"], password=data["password"])
        if getattr(http_request, "axes_locked_out", False):
            raise TooManyAttempts()
        if user is None or not user.is_active:
            raise fail(AccountsError.INVALID_CREDENTIALS)
        lifetime = token_lifetime(data["expires_in_days"]) if "expires_in_days" in data else DEFAULT_LIFETIME
        with transaction.atomic():
            token, key = token_issue(user=user, name=data.get("name", ""), lifetime=lifetime)
            record(Action.SIGN_IN, actor=user, obj=user, changes={"method": "api_token"})
        return Response(ts.TokenOutput({"token": key, "id": token.pk, "name": token.name, "key_prefix": token.key_prefix,
                                       "expiry": token.expiry}).data)
