"""Groups: staff create, rename and delete them and name their managers; staff and a group's managers change
its members. Groups kept in step by single sign-on (``SsoGroup``) change only at the directory."""
from __future__ import annotations

from django.contrib.auth.models import Group
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, QuerySet

from accounts.errors import AccountsError
from accounts.models import GroupManager, SsoGroup
from core.audit import Action, record
from core.errors import fail


def groups_visible(*, user) -> QuerySet[Group]:
    """The groups ``user`` may open in the console and the API: every group for staff, those they manage otherwise."""
    if user.is_staff:
        return Group.objects.all()
    return Group.objects.filter(Exists(GroupManager.objects.filter(group=OuterRef("pk"), user=user)))


def _name_check(name: str) -> str:
    name = name.strip()
    if not name or len(name) > 150:
        raise fail(AccountsError.INVALID_GROUP_NAME, on_field="name")
    return name


def _not_sso(group: Group) -> None:
    if SsoGroup.objects.filter(group=group).exists():
        raise fail(AccountsError.SSO_GROUP)


def group_create(*, name: str) -> Group:
    name = _name_check(name)
    try:
        with transaction.atomic():
            if Group.objects.filter(name__iexact=name).exists():
                raise IntegrityError
            return Group.objects.create(name=name)
    except IntegrityError:
        raise fail(AccountsError.GROUP_NAME_TAKEN, name=name, on_field="name") from None


def group_rename(*, group: Group, name: str) -> Group:
    name = _name_check(name)
    if name == group.name:
        return group
    _not_sso(group)
    if Group.objects.filter(name__iexact=name).exclude(pk=group.pk).exists():
        raise fail(AccountsError.GROUP_NAME_TAKEN, name=name, on_field="name")
    try:
        with transaction.atomic():
            group.name = name
            group.save(update_fields=["name"])
    except IntegrityError:
        raise fail(AccountsError.GROUP_NAME_TAKEN, name=name, on_field="name") from None
    return group


def group_delete(*, group: Group) -> None:
    """Delete ``group``: its members lose the roles it held on knowledge bases and the documents restricted to it."""
    group.delete()


def group_member_add(*, group: Group, user) -> None:
    _not_sso(group)
    group.user_set.add(user)


def group_member_remove(*, group: Group, user) -> None:
    _not_sso(group)
    group.user_set.remove(user)


def group_manager_add(*, group: Group, user) -> GroupManager:
    with transaction.atomic():
        manager, created = GroupManager.objects.get_or_create(group=group, user=user)
        if created:
            record(Action.GROUP_MANAGER_ADD, obj=group, changes={"manager": [None, user.get_username()]})
    return manager


def group_manager_remove(*, group: Group, user) -> None:
    with transaction.atomic():
        if GroupManager.objects.filter(group=group, user=user).delete()[0]:
            record(Action.GROUP_MANAGER_REMOVE, obj=group, changes={"manager": [user.get_username(), None]})
