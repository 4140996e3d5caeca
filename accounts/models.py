"""API tokens: django-rest-knox's hashed token, with an id, a name and when it was last used.

The key itself is never stored: ``digest`` is its SHA-512 (knox's ``hash_token``) and
``token_key`` its first 15 characters, the index knox looks a presented key up by. A token
ends at ``expiry`` (``ZHIKU_TOKEN_TTL_DAYS`` after it was issued), when its owner revokes it,
and when the owner's password changes or the account is deactivated (``accounts/signals.py``).
"""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.utils.translation import gettext_lazy as _
from knox.models import AbstractAuthToken
from knox.settings import CONSTANTS

from knowledge.models import Role


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


class SsoIdentity(models.Model):
    """The link between an account and its identity at a directory (LDAP) or an OpenID provider (OIDC).

    An account signs in through single sign-on only when it is linked: a directory or provider user whose
    name matches a local account made by hand (an administrator's, say) is refused rather than let in as
    that account (``accounts/sso/ldap.py``, ``accounts/sso/oidc.py``; docs/sso.md).
    """

    class Source(models.TextChoices):
        LDAP = "ldap", _("LDAP directory")
        OIDC = "oidc", _("OpenID provider")

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identities",
                             verbose_name=_("user"))
    source = models.CharField(verbose_name=_("source"), max_length=8, choices=Source.choices)
    # The OIDC issuer; empty for LDAP.
    issuer = models.CharField(verbose_name=_("issuer"), max_length=255, blank=True, default="")
    # The OIDC "sub" claim; for LDAP the directory user name, lower-cased.
    subject = models.CharField(verbose_name=_("subject"), max_length=255)
    created = models.DateTimeField(verbose_name=_("created"), auto_now_add=True)
    last_login = models.DateTimeField(verbose_name=_("last sign-in"), null=True, blank=True)

    class Meta:
        verbose_name = _("single sign-on identity")
        verbose_name_plural = _("single sign-on identities")
        constraints = [models.UniqueConstraint(fields=["source", "issuer", "subject"], name="ssoidentity_unique_subject")]

    def __str__(self) -> str:
        return f"{self.source}:{self.subject} → {self.user_id}"


class SsoGroup(models.Model):
    """A group whose members single sign-on keeps in step with the directory's or the provider's groups.

    Only such groups are taken from a user at sign-in when the directory no longer lists them: groups made
    in the console or the admin are never touched (``accounts/sso/claims.py``).
    """

    group = models.OneToOneField(Group, on_delete=models.CASCADE, primary_key=True, related_name="sso",
                                 verbose_name=_("group"))
    source = models.CharField(verbose_name=_("source"), max_length=8, choices=SsoIdentity.Source.choices)

    class Meta:
        verbose_name = _("single sign-on group")
        verbose_name_plural = _("single sign-on groups")

    def __str__(self) -> str:
        return f"{self.group_id} ({self.source})"


class GroupManager(models.Model):
    """A person who adds and removes the members of one group without being staff (docs/people.md)."""

    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="managers", verbose_name=_("group"))
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="managed_groups",
                             verbose_name=_("user"))
    created = models.DateTimeField(verbose_name=_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("group manager")
        verbose_name_plural = _("group managers")
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["group", "user"], name="groupmanager_unique")]

    def __str__(self) -> str:
        return f"{self.user_id} manages {self.group_id}"


class Invitation(models.Model):
    """A one-time link that creates an account and gives it roles on knowledge bases (accounts/people/invitations.py).

    Only the SHA-256 of the link's token is kept (``digest``); the token is shown once, to whoever made it.
    """

    digest = models.CharField(verbose_name=_("digest"), max_length=64, unique=True)
    email = models.EmailField(verbose_name=_("e-mail"), blank=True, default="")
    note = models.CharField(verbose_name=_("note"), max_length=200, blank=True, default="")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True,
                                   related_name="invitations_sent", verbose_name=_("created by"))
    created = models.DateTimeField(verbose_name=_("created"), auto_now_add=True)
    expires_at = models.DateTimeField(verbose_name=_("expires"))
    accepted_at = models.DateTimeField(verbose_name=_("accepted"), null=True, blank=True)
    accepted_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                    related_name="invitations_accepted", verbose_name=_("accepted by"))
    revoked_at = models.DateTimeField(verbose_name=_("revoked"), null=True, blank=True)
    # Not stored: the invitations page sets it (services.invitation_state) for its template.
    state: str

    class Meta:
        verbose_name = _("invitation")
        verbose_name_plural = _("invitations")
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"invitation {self.pk} ({self.email or '—'})"


class InvitationGrant(models.Model):
    """One knowledge-base role an invitation gives on acceptance."""

    invitation = models.ForeignKey(Invitation, on_delete=models.CASCADE, related_name="grants",
                                   verbose_name=_("invitation"))
    kb = models.ForeignKey("knowledge.KnowledgeBase", on_delete=models.CASCADE, related_name="invitation_grants",
                           verbose_name=_("knowledge base"))
    role = models.CharField(verbose_name=_("role"), max_length=10, choices=Role.choices)

    class Meta:
        verbose_name = _("invitation role")
        verbose_name_plural = _("invitation roles")
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["invitation", "kb"], name="invitationgrant_unique_kb")]


class Preference(models.Model):
    """What a person chose on the console's pages and finds again on any browser (issue 38): the knowledge bases ticked
    on the chat page (``accounts.preferences``)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="preference",
                                verbose_name=_("user"))
    chat_kb_ids = models.JSONField(_("knowledge bases ticked on the chat page"), default=list, blank=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("preference")
        verbose_name_plural = _("preferences")

    def __str__(self) -> str:
        return f"preferences of user {self.user_id}"
