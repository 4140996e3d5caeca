"""API tokens: django-rest-knox's hashed token, with an id, a name and when it was last used.

The key itself is never stored: ``digest`` is its SHA-512 (knox's ``hash_token``) and
``token_key`` its first 15 characters, the index knox looks a presented key up by. A token
ends at ``expiry`` (``ZHIKU_TOKEN_TTL_DAYS`` after it was issued), when its owner revokes it,
and when the owner's password changes or the account is deactivated (``accounts/signals.py``).
"""
from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _
from knox.models import AbstractAuthToken
from knox.settings import CONSTANTS


class ApiToken(AbstractAuthToken):
    """One API key of a user (``Authorization: Token <key>``, ``/ws/chat/?token=<key>``)."""

    id = models.BigAutoField(primary_key=True)
    # knox makes the digest the primary key; here it is only unique, so a token has an id to list and revoke it by.
    digest = models.CharField(verbose_name=_("digest"), max_length=CONSTANTS.DIGEST_LENGTH, unique=True)
    name = models.CharField(verbose_name=_("name"), max_length=100, blank=True, default="",
                            help_text=_("What the token is for, as its owner named it"))
    last_used = models.DateTimeField(verbose_name=_("last used"), null=True, blank=True,
                                     help_text=_("Last request authenticated with it (to the minute)"))

    class Meta:
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")
        ordering = ["-created", "-id"]
        indexes = [models.Index(fields=["user", "expiry"], name="apitoken_user_expiry")]

    def __str__(self) -> str:
        return f"{self.token_key[:8]}… ({self.user_id})"

    @property
    def key_prefix(self) -> str:
        """The key's first 8 characters, enough for its owner to tell keys apart (the rest is never stored)."""
        return self.token_key[:8]
