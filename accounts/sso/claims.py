"""What single sign-on writes to an account: its link to the outside identity and its mapped groups.

Both sources end here: the LDAP directory's groups (their cn, ``accounts/sso/ldap.py``) and the OIDC
provider's groups claim (``accounts/sso/oidc.py``). A mapping (``ZHIKU_*_GROUP_MAP``) names the zhiku
group of each directory group; without one each directory group is mirrored under its own name. The
groups single sign-on fills are marked (``SsoGroup``): at each sign-in the user is put in the groups
the directory lists and taken out of the marked ones it no longer lists; other groups are left alone.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from accounts.models import SsoGroup, SsoIdentity

GROUP_NAME_MAX = cast(int, Group._meta.get_field("name").max_length)  # a CharField always has one (150)


def groups_mapped(names: Iterable[str], *, group_map: dict[str, str], mirror: bool) -> set[str]:
    """The zhiku group names for the directory group ``names``."""
    names = {n.strip() for n in names if isinstance(n, str) and n.strip()}
    if group_map:
        return {group_map[n] for n in names if n in group_map}
    return {n for n in names if len(n) <= GROUP_NAME_MAX} if mirror else set()


@transaction.atomic
def groups_sync(*, user, names: Iterable[str], source: str, group_map: dict[str, str], mirror: bool) -> set[str]:
    """Put ``user`` in the groups mapped from ``names`` and out of the SSO groups of ``source`` it lost; the names."""
    wanted = groups_mapped(names, group_map=group_map, mirror=mirror)
    groups = []
    for name in sorted(wanted):
        group, _created = Group.objects.get_or_create(name=name)
        SsoGroup.objects.get_or_create(group=group, defaults={"source": source})
        groups.append(group)
    lost = user.groups.filter(sso__source=source).exclude(name__in=wanted)
    user.groups.remove(*lost)
    user.groups.add(*groups)
    return wanted


def identity_user(*, source: str, subject: str, issuer: str = ""):
    """The account linked to this outside identity, or None."""
    found = SsoIdentity.objects.select_related("user").filter(source=source, issuer=issuer, subject=subject).first()
    return found.user if found else None


def identity_linked(*, user, source: str) -> bool:
    return SsoIdentity.objects.filter(user=user, source=source).exists()


def identity_link(*, user, source: str, subject: str, issuer: str = "") -> SsoIdentity:
    """Link ``user`` to the identity (or note the sign-in on the link it has)."""
    identity, _created = SsoIdentity.objects.update_or_create(
        source=source, issuer=issuer, subject=subject, defaults={"user": user, "last_login": timezone.now()})
    return identity
