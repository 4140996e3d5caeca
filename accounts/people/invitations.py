"""Invitations: one-time links that create an account and give it roles on knowledge bases.

Only the SHA-256 of a link's random token is stored; the token is shown once, to its maker. Accepting locks
the row, gives the roles (``knowledge.services.kbs.membership_set``) and marks it accepted in one transaction;
an expired, revoked or used link answers 410 with its own code, as does one whose maker is no longer active or
allowed to grant its roles (``invitation_maker_lost``). A maker who stops owning a KB has their pending
invitations to it withdrawn (:func:`invitations_withdraw_lost`, from ``accounts.signals``); every owner of a
KB sees and can withdraw its pending invitations (:func:`invitations_visible`).
"""
from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from accounts.errors import AccountsError
from accounts.models import Invitation, InvitationGrant
from accounts.people.mail import mail_send
from accounts.people.users import email_check, user_create
from core.audit import Action, record
from core.errors import fail
from knowledge.access import has_role, kbs_for_user
from knowledge.errors import KnowledgeError
from knowledge.models import KnowledgeBase, Role
from knowledge.services.kbs import membership_set

MAX_GRANTS = 20


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


@dataclass(frozen=True)
class Grant:
    kb: KnowledgeBase
    role: str


def _check_grants(*, actor, grants: list[Grant]) -> None:
    if len(grants) > MAX_GRANTS or len({g.kb.pk for g in grants}) != len(grants):
        raise fail(AccountsError.INVALID_INVITATION, limit=MAX_GRANTS, on_field="roles")
    for grant in grants:
        if grant.role not in Role.values:
            raise fail(KnowledgeError.INVALID_ROLE, role=grant.role)
        if not actor.is_staff and not has_role(user=actor, kb=grant.kb, min_role=Role.OWNER):
            raise fail(AccountsError.INVITATION_NOT_ALLOWED)


def invitation_create(*, actor, grants: list[Grant], email: str = "", days: int | None = None,
                      note: str = "") -> tuple[Invitation, str]:
    """A new invitation from ``actor`` (staff, or the owner of every KB in ``grants``) and its token (only now known)."""
    limit = settings.ZHIKU_INVITATION_MAX_DAYS
    days = settings.ZHIKU_INVITATION_DAYS if days is None else days
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= limit:
        raise fail(AccountsError.INVALID_INVITATION, "days", limit=limit, on_field="expires_in_days")
    if not actor.is_staff and not grants:
        raise fail(AccountsError.INVITATION_NOT_ALLOWED)
    _check_grants(actor=actor, grants=grants)
    token = secrets.token_urlsafe(32)
    with transaction.atomic():
        invitation = Invitation.objects.create(
            digest=token_digest(token), email=email_check(email), note=note.strip()[:200], created_by=actor,
            expires_at=timezone.now() + timedelta(days=days))
        InvitationGrant.objects.bulk_create(InvitationGrant(invitation=invitation, kb=g.kb, role=g.role) for g in grants)
        each: list[Grant | None] = [*grants] or [None]
        for grant in each:  # one entry per KB, so each owner's log shows the invitations to it
            record(Action.INVITATION_CREATE, actor=actor, obj=invitation, kb=grant.kb if grant else None, changes={
                "email": [None, invitation.email], "role": [None, grant.role if grant else None],
                "expires_at": [None, invitation.expires_at.isoformat()]})
    return invitation, token


def invitation_send(*, invitation: Invitation, url: str) -> None:
    """E-mail the link to the invitation's address (409 ``email_not_configured`` where the site sends no e-mail)."""
    if not invitation.email:
        raise fail(AccountsError.EMAIL_NOT_CONFIGURED, "no_address")
    mail_send(to=invitation.email, template="accounts/mail/invitation", context={
        "invitation": invitation, "url": url, "inviter": invitation.created_by,
        "kbs": [g.kb.name for g in invitation.grants.select_related("kb")]})


def _usable(invitation: Invitation | None) -> Invitation:
    if invitation is None:
        raise fail(AccountsError.INVITATION_NOT_FOUND)
    if invitation.revoked_at is not None:
        raise fail(AccountsError.INVITATION_REVOKED)
    if invitation.accepted_at is not None:
        raise fail(AccountsError.INVITATION_USED)
    if invitation.expires_at <= timezone.now():
        raise fail(AccountsError.INVITATION_EXPIRED)
    return invitation


def invitation_for_token(token: str) -> Invitation:
    """The invitation a link's token opens, if it can still be accepted (404 / 410 with why not)."""
    if not token or len(token) > 100:
        raise fail(AccountsError.INVITATION_NOT_FOUND)
    invitation = _usable(Invitation.objects.filter(digest=token_digest(token)).select_related("created_by").first())
    if not _maker_may_grant(invitation):
        raise fail(AccountsError.INVITATION_MAKER_LOST)
    return invitation


def _maker_may_grant(invitation: Invitation) -> bool:
    maker = invitation.created_by
    if maker is None or not maker.is_active:
        return False
    if maker.is_staff:
        return True
    return all(has_role(user=maker, kb=g.kb, min_role=Role.OWNER) for g in invitation.grants.select_related("kb"))


def invitation_accept(*, token: str, user) -> Invitation:
    """``user`` (signed in, active) accepts: the roles are theirs and the link is spent, in one transaction."""
    with transaction.atomic():
        locked = Invitation.objects.select_for_update().filter(digest=token_digest(token)).first()
        invitation = _usable(locked)
        if not _maker_may_grant(invitation):
            raise fail(AccountsError.INVITATION_MAKER_LOST)
        for grant in invitation.grants.select_related("kb"):
            membership_set(kb=grant.kb, role=grant.role, user=user)
        invitation.accepted_at, invitation.accepted_by = timezone.now(), user
        invitation.save(update_fields=["accepted_at", "accepted_by"])
        for grant in invitation.grants.select_related("kb"):
            record(Action.INVITATION_ACCEPT, actor=user, obj=invitation, kb=grant.kb, changes={"role": [None, grant.role]})
    return invitation


def invitation_accept_new(*, token: str, username: str, password: str, email: str = ""):
    """A new account made through the link, which it then accepts; nothing is created if the link cannot be used."""
    with transaction.atomic():
        invitation = _usable(Invitation.objects.select_for_update().filter(digest=token_digest(token)).first())
        user = user_create(username=username, password=password, email=email or invitation.email)
        invitation_accept(token=token, user=user)
    return user


def invitation_revoke(*, invitation: Invitation) -> Invitation:
    """Withdraw a link not yet accepted (an accepted one stays as it was: 410 ``invitation_used``)."""
    with transaction.atomic():
        invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
        if invitation.accepted_at is not None:
            raise fail(AccountsError.INVITATION_USED)
        if invitation.revoked_at is None:
            invitation.revoked_at = timezone.now()
            invitation.save(update_fields=["revoked_at"])
            for grant in invitation.grants.select_related("kb") or [None]:
                record(Action.INVITATION_REVOKE, obj=invitation, kb=grant.kb if grant else None)
    return invitation


def invitations_visible(*, user) -> QuerySet[Invitation]:
    """Every invitation for staff; for anyone else their own and those to a KB they own."""
    qs = Invitation.objects.select_related("created_by", "accepted_by").prefetch_related("grants__kb")
    if user.is_staff:
        return qs
    owned = kbs_for_user(user=user, min_role=Role.OWNER).values("pk")
    mine = Invitation.objects.filter(Q(created_by=user) | Q(grants__kb__in=owned)).values("pk")
    return qs.filter(pk__in=mine)


def invitations_withdraw_lost(*, user, kb: KnowledgeBase) -> int:
    """Withdraw ``user``'s pending invitations to ``kb`` once they may no longer grant roles on it; how many."""
    if user is None or (user.is_active and user.is_staff) or has_role(user=user, kb=kb, min_role=Role.OWNER):
        return 0
    pending = Invitation.objects.filter(created_by=user, grants__kb=kb, accepted_at__isnull=True,
                                        revoked_at__isnull=True).distinct()
    count = 0
    for invitation in pending:
        invitation_revoke(invitation=invitation)
        count += 1
    return count


def invitation_state(invitation: Invitation) -> str:
    """pending, accepted, revoked or expired."""
    if invitation.revoked_at is not None:
        return "revoked"
    if invitation.accepted_at is not None:
        return "accepted"
    return "expired" if invitation.expires_at <= timezone.now() else "pending"
