"""The API's token inputs and outputs (``accounts.api.auth``, ``accounts.api.tokens``; accounts/tokens.py)."""
from __future__ import annotations

from django.conf import settings
from rest_framework import serializers

from core.api.fields import StrictInput, Text


class ExpiresInDays(serializers.IntegerField):
    """A token's lifetime in whole days, at most ZHIKU_TOKEN_MAX_DAYS; null (never expires) only where that is 0.

    Read from the settings each time a serializer is made (DRF copies declared fields by calling ``__init__`` again).
    """

    def __init__(self, **kwargs):
        limit = settings.ZHIKU_TOKEN_MAX_DAYS
        super().__init__(required=False, min_value=1, max_value=limit or None, allow_null=not limit, help_text=(
            "How many days the token lasts, at most ZHIKU_TOKEN_MAX_DAYS (default 365; 0 there allows null, a token "
            "that never expires). Left out: ZHIKU_TOKEN_TTL_DAYS (default 30)."), **kwargs)


class TokenInput(StrictInput):
    username = Text(max_length=150, trim_whitespace=False)
    password = Text(max_length=4096, trim_whitespace=False, style={"input_type": "password"})
    name = Text(required=False, allow_blank=True, max_length=100, default="",
                help_text="What the token is for (shown in the token list).")
    expires_in_days = ExpiresInDays()


class TokenCreateInput(StrictInput):
    name = Text(max_length=100, help_text="What the token is for (shown in the token list).")
    expires_in_days = ExpiresInDays()


class TokenOutput(serializers.Serializer):
    token = serializers.CharField(help_text="The key: shown this once, stored only hashed.")
    id = serializers.IntegerField(help_text="The token's id, to revoke it (`DELETE /api/auth/tokens/{id}/`).")
    name = serializers.CharField()
    key_prefix = serializers.CharField(help_text="The key's first 8 characters, as the token list shows them.")
    expiry = serializers.DateTimeField(allow_null=True, help_text="When the key stops working; null: never.")


class ApiTokenOutput(serializers.Serializer):
    """One of the caller's tokens; never the key itself."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    key_prefix = serializers.CharField(help_text="The key's first 8 characters.")
    created = serializers.DateTimeField()
    expiry = serializers.DateTimeField(allow_null=True)
    last_used = serializers.DateTimeField(allow_null=True, help_text="To the minute; null if never used.")
    current = serializers.BooleanField(help_text="Whether this request was authenticated with it.")


class TokensRevokedOutput(serializers.Serializer):
    revoked = serializers.IntegerField(help_text="How many tokens were revoked.")
