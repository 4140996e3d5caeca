"""Credentials end with the access they were issued on.

When a user's password is set (``set_password``: the admin's password forms, ``changepassword``,
a reset; also ``set_unusable_password`` and a hash written directly) or their account is
deactivated, every credential they hold is deleted (``credentials_revoke_all``: API tokens, MCP
clients' OAuth access and refresh tokens and authorization codes; on deactivation the browser
sessions too, which a new password ends by itself): a key or token copied before the change stops
working at once, and re-activating the account does not bring it back. A removed
account takes them along by its foreign keys (``on_delete=CASCADE``). A password *re-hash* is not a
change and revokes nothing: at login Django replaces an outdated hash of the same password
(another algorithm, fewer iterations than now) without ``set_password``'s mark.
"""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth.hashers import get_hasher, identify_hasher
from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import receiver

from accounts.credentials import credentials_revoke_all

WATCHED = {"password", "is_active"}


def _outdated(encoded: str) -> bool:
    """Whether Django would re-hash ``encoded`` at the next login (as ``hashers.verify_password`` decides)."""
    try:
        hasher = identify_hasher(encoded)
    except ValueError:
        return False
    preferred = get_hasher("default")
    return hasher.algorithm != preferred.algorithm or preferred.must_update(encoded)


def _password_changed(old_hash: str, user) -> bool:
    if old_hash == user.password:
        return False
    if getattr(user, "_password", None) is not None:  # set_password, not yet saved: a password was set
        return True
    # The hash replaced without set_password: a re-hash of an outdated hash at login, or a direct write.
    return not _outdated(old_hash)


@receiver(pre_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="accounts_note_credential_change")
def note_credential_change(sender, instance, raw=False, update_fields=None, **kwargs) -> None:
    instance._revoke_tokens = instance._deactivated = False
    if raw or instance.pk is None or (update_fields is not None and not WATCHED & set(update_fields)):
        return
    old = sender._default_manager.filter(pk=instance.pk).values("password", "is_active").first()
    if old is None:
        return
    deactivated = old["is_active"] and not instance.is_active
    instance._revoke_tokens = deactivated or _password_changed(old["password"], instance)
    instance._deactivated = deactivated


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="accounts_revoke_tokens")
def revoke_tokens(sender, instance, raw=False, **kwargs) -> None:
    if getattr(instance, "_revoke_tokens", False):
        instance._revoke_tokens = False
        credentials_revoke_all(user=instance, sessions=getattr(instance, "_deactivated", False))


# --- invitations follow their maker's rights (accounts/people/invitations.py) ------------------------------------

def _membership_changed(instance) -> None:
    from accounts.people.invitations import invitations_withdraw_lost

    if instance.user_id is not None:
        invitations_withdraw_lost(user=instance.user, kb=instance.kb)


@receiver(post_save, sender="knowledge.Membership", dispatch_uid="accounts.invitations_role_changed")
def _invitations_after_role_change(sender, instance, raw=False, **kwargs) -> None:
    if not raw:
        _membership_changed(instance)


@receiver(post_delete, sender="knowledge.Membership", dispatch_uid="accounts.invitations_member_removed")
def _invitations_after_removal(sender, instance, origin=None, **kwargs) -> None:
    # Only a membership removed by itself: when its KB or its user is deleted, the grants go with them.
    if origin is None or origin is instance or getattr(origin, "model", type(origin)) is type(instance):
        _membership_changed(instance)
