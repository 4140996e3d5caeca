"""Audit entries for writes with many entry points, caught by Django's signals wherever they are made.

Sign-ins go through Django's auth (login pages, admin, LDAP, OIDC), so its login signals see them all;
memberships, groups, group members, accounts' flags and API tokens are written by the admin, the services,
single sign-on's group mirroring and the people pages alike, so their model signals are the one place that
sees every path. A row deleted by a cascade (a KB's memberships, a user's tokens) is not recorded again: the
entry of the deletion that caused it says so (``post_delete``'s ``origin``).
"""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_save
from django.dispatch import receiver
from django.utils import timezone

from accounts.models import ApiToken
from core.audit.actions import Action
from core.audit.context import who
from core.audit.recording import NOBODY, diff, record
from knowledge.models import Membership

User = get_user_model()
USER_FLAGS = ("is_active", "is_staff", "is_superuser")


def _method(backend: str | None) -> str:
    backend = (backend or "").lower()
    return "ldap" if "ldap" in backend or "directory" in backend else "oidc" if "oidc" in backend or "provider" in backend else "password"


def _direct(instance, origin) -> bool:
    """Whether ``instance`` itself was deleted (not as a cascade of another row's deletion)."""
    if origin is None or origin is instance:
        return True
    model = getattr(origin, "model", type(origin))
    return model is type(instance)


# --- sign-in ------------------------------------------------------------------------------------------------------

@receiver(user_logged_in, dispatch_uid="audit.signed_in")
def signed_in(sender, request, user, **kwargs) -> None:
    record(Action.SIGN_IN, actor=user, obj=user, request=request, changes={"method": _method(getattr(user, "backend", ""))})


@receiver(user_login_failed, dispatch_uid="audit.sign_in_failed")
def sign_in_failed(sender, credentials, request=None, **kwargs) -> None:
    # Django has already masked the password in ``credentials``; only the name tried is kept.
    name = str(credentials.get("username") or "")[:150]
    record(Action.SIGN_IN_FAILED, actor_name=name, request=request, object_repr=name, changes={"username": name})


@receiver(user_logged_out, dispatch_uid="audit.signed_out")
def signed_out(sender, request, user, **kwargs) -> None:
    if user is not None:
        record(Action.SIGN_OUT, actor=user, obj=user, request=request)


# --- API tokens (console tokens and the token endpoint) ------------------------------------------------------------

@receiver(post_save, sender=ApiToken, dispatch_uid="audit.token_created")
def token_created(sender, instance, created, raw=False, **kwargs) -> None:
    if created and not raw:
        # The token endpoint is anonymous until it issues the token: its owner is the actor then.
        actor = who()[0] or instance.user
        record(Action.TOKEN_CREATE, actor=actor, obj=instance, object_repr=f"{instance.name or '-'} ({instance.key_prefix}…)",
               changes={"owner": instance.user.get_username(), "name": instance.name, "expiry": instance.expiry})


@receiver(post_delete, sender=ApiToken, dispatch_uid="audit.token_revoked")
def token_revoked(sender, instance, origin=None, **kwargs) -> None:
    expired = instance.expiry is not None and instance.expiry <= timezone.now()
    if expired or not _direct(instance, origin):
        return  # knox's clean-up of an expired token, or the owner's account deleted (recorded as user.delete)
    record(Action.TOKEN_REVOKE, obj=instance, object_repr=f"{instance.name or '-'} ({instance.key_prefix}…)",
           changes={"owner": instance.user.get_username(), "name": instance.name})


# --- KB memberships -----------------------------------------------------------------------------------------------

def _member_name(membership: Membership) -> str:
    if membership.user is not None:
        return membership.user.get_username()
    assert membership.group is not None  # a membership is a user's or a group's (its check constraint)
    return f"@{membership.group.name}"


@receiver(pre_save, sender=Membership, dispatch_uid="audit.membership_before")
def membership_before(sender, instance, raw=False, **kwargs) -> None:
    instance._audit_role = None if raw or instance.pk is None else (
        Membership.objects.filter(pk=instance.pk).values_list("role", flat=True).first())


@receiver(post_save, sender=Membership, dispatch_uid="audit.membership_saved")
def membership_saved(sender, instance, created, raw=False, **kwargs) -> None:
    if raw:
        return
    before = getattr(instance, "_audit_role", None)
    if created or before is None:
        record(Action.MEMBERSHIP_ADD, obj=instance, kb=instance.kb, object_repr=_member_name(instance),
               changes={"role": [None, instance.role]})
    elif before != instance.role:
        record(Action.MEMBERSHIP_CHANGE, obj=instance, kb=instance.kb, object_repr=_member_name(instance),
               changes={"role": [before, instance.role]})


@receiver(post_delete, sender=Membership, dispatch_uid="audit.membership_removed")
def membership_removed(sender, instance, origin=None, **kwargs) -> None:
    if _direct(instance, origin):
        record(Action.MEMBERSHIP_REMOVE, obj=instance, kb=instance.kb, object_repr=_member_name(instance),
               changes={"role": [instance.role, None]})


# --- groups and their members -------------------------------------------------------------------------------------

@receiver(pre_save, sender=Group, dispatch_uid="audit.group_before")
def group_before(sender, instance, raw=False, **kwargs) -> None:
    instance._audit_name = None if raw or instance.pk is None else (
        Group.objects.filter(pk=instance.pk).values_list("name", flat=True).first())


@receiver(post_save, sender=Group, dispatch_uid="audit.group_saved")
def group_saved(sender, instance, created, raw=False, **kwargs) -> None:
    if raw:
        return
    before = getattr(instance, "_audit_name", None)
    if created:
        record(Action.GROUP_CREATE, obj=instance, changes={"name": [None, instance.name]})
    elif before is not None and before != instance.name:
        record(Action.GROUP_UPDATE, obj=instance, changes={"name": [before, instance.name]})


@receiver(post_delete, sender=Group, dispatch_uid="audit.group_deleted")
def group_deleted(sender, instance, **kwargs) -> None:
    record(Action.GROUP_DELETE, obj=instance, changes={"name": [instance.name, None]})


def _pairs(instance, reverse: bool, pk_set) -> list[tuple]:
    """(user, group) for each link an m2m change of ``User.groups`` names, from either side."""
    if reverse:  # instance is a group, pk_set user ids
        return [(user, instance) for user in User.objects.filter(pk__in=pk_set)]
    return [(instance, group) for group in Group.objects.filter(pk__in=pk_set)]


@receiver(m2m_changed, sender=User.groups.through, dispatch_uid="audit.group_members")
def group_members(sender, instance, action, reverse, pk_set, **kwargs) -> None:
    if action == "pre_clear":
        linked = instance.user_set.all() if reverse else instance.groups.all()
        instance._audit_cleared = set(linked.values_list("pk", flat=True))
        return
    if action == "post_clear":
        verb, pk_set = Action.GROUP_MEMBER_REMOVE, instance.__dict__.pop("_audit_cleared", set())
    elif action in ("post_add", "post_remove"):
        verb = Action.GROUP_MEMBER_ADD if action == "post_add" else Action.GROUP_MEMBER_REMOVE
    else:
        return
    for user, group in _pairs(instance, reverse, pk_set or ()):
        record(verb, obj=group, changes={"user": user.get_username()})


# --- accounts: created, flags changed, deleted ----------------------------------------------------------------------

@receiver(pre_save, sender=User, dispatch_uid="audit.user_before")
def user_before(sender, instance, raw=False, update_fields=None, **kwargs) -> None:
    instance._audit_flags = None
    if raw or instance.pk is None or (update_fields is not None and not set(USER_FLAGS) & set(update_fields)):
        return
    instance._audit_flags = User.objects.filter(pk=instance.pk).values(*USER_FLAGS).first()


@receiver(post_save, sender=User, dispatch_uid="audit.user_saved")
def user_saved(sender, instance, created, raw=False, **kwargs) -> None:
    if raw:
        return
    after = {flag: getattr(instance, flag) for flag in USER_FLAGS}
    if created:
        record(Action.USER_CREATE, obj=instance, changes=after)
        return
    before = instance.__dict__.pop("_audit_flags", None)
    changed = diff(before, after) if before else {}
    if changed:
        record(Action.USER_UPDATE, obj=instance, changes=changed)


@receiver(post_delete, sender=User, dispatch_uid="audit.user_deleted")
def user_deleted(sender, instance, **kwargs) -> None:
    actor = who()[0]
    if actor is not None and actor.pk == instance.pk:
        actor = NOBODY  # the row is gone: the username alone says who it was
    record(Action.USER_DELETE, actor=actor, obj=instance, object_repr=instance.get_username())
