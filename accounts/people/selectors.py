"""Reads of people and groups with their permissions applied: the staff list, the user picker, a person's access."""
from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import Case, Count, IntegerField, Q, QuerySet, Value, When

from accounts.errors import AccountsError
from accounts.models import GroupManager
from core.errors import fail
from core.safejson import check_characters
from knowledge.access import kbs_for_user
from knowledge.models import KnowledgeBase, Membership, Role

User = get_user_model()
QUERY_MAX = 100
KINDS = ("all", "user", "group")


def _user_matches(q: str, *, email_substring: bool = True) -> Q:
    """Name or username holding ``q``; the e-mail holding it (staff) or, for anyone else, equal to it: a
    substring search on addresses would let a caller rebuild a masked address one letter at a time."""
    names = Q(username__icontains=q) | Q(first_name__icontains=q) | Q(last_name__icontains=q)
    for cut in range(1, min(len(q), 3)):  # a whole Chinese name as shown (core/names.py): 「张伟」 is 张 + 伟
        names |= Q(last_name__iexact=q[:cut], first_name__istartswith=q[cut:])
    return names | (Q(email__icontains=q) if email_substring else Q(email__iexact=q))


def users_list(*, q: str = "") -> QuerySet:
    """Every account for staff, active or not, matching ``q`` on name, username or e-mail; by username."""
    qs = User.objects.all()
    q = q.strip()
    check_characters({"q": q})  # a NUL cannot be sent to PostgreSQL: 400 invalid_characters
    if q:
        qs = qs.filter(_user_matches(q))
    return qs.order_by("username", "id").prefetch_related("sso_identities")


def may_search_people(*, user) -> bool:
    """Who may use the picker: staff, owners of a knowledge base and group managers (it names people)."""
    if not user.is_authenticated or not user.is_active:
        return False
    return (user.is_staff or GroupManager.objects.filter(user=user).exists()
            or kbs_for_user(user=user, min_role=Role.OWNER).exists())


def mask_email(email: str) -> str:
    """``a***@example.com``: enough to tell two people of one name apart, not an address to write to."""
    local, at, domain = email.partition("@")
    if not at:
        return ""
    return f"{local[:1]}***@{domain}"


def _ranked(qs: QuerySet, field: str, q: str) -> QuerySet:
    """Exact matches first, then those starting with ``q``, then the rest, each by name."""
    rank = Case(When(**{f"{field}__iexact": q}, then=Value(0)), When(**{f"{field}__istartswith": q}, then=Value(1)),
                default=Value(2), output_field=IntegerField())
    return qs.annotate(rank=rank).order_by("rank", field, "id")


@dataclass(frozen=True)
class SearchResult:
    users: list
    groups: list


def people_search(*, actor, q: str, kind: str = "all", limit: int | None = None) -> SearchResult:
    """Active people and groups whose name or username holds ``q`` (staff: or e-mail; others: or the whole
    e-mail address); at most ``limit`` of each.

    Refused (403 ``search_not_allowed``) to anyone but staff, KB owners and group managers; ``q`` is 1 to
    100 characters (400 ``invalid_query``).
    """
    if not may_search_people(user=actor):
        raise fail(AccountsError.SEARCH_NOT_ALLOWED)
    q = q.strip()
    check_characters({"q": q})
    if not q or len(q) > QUERY_MAX:
        raise fail(AccountsError.INVALID_QUERY, limit=QUERY_MAX, on_field="q")
    if kind not in KINDS:
        raise fail(AccountsError.INVALID_QUERY, "kind", on_field="kind")
    limit = limit or settings.ZHIKU_PEOPLE_SEARCH_LIMIT
    users, groups = [], []
    if kind in ("all", "user"):
        matches = _user_matches(q, email_substring=actor.is_staff)
        users = list(_ranked(User.objects.filter(matches, is_active=True), "username", q)[:limit])
    if kind in ("all", "group"):
        groups = list(_ranked(Group.objects.filter(name__icontains=q), "name", q)
                      .annotate(member_count=Count("user", filter=Q(user__is_active=True)))[:limit])
    return SearchResult(users=users, groups=groups)


@dataclass(frozen=True)
class Access:
    """One way a person holds a role on a KB: as its owner, directly, or through ``group``."""

    kb: KnowledgeBase
    role: str
    group: Group | None = None
    owner: bool = False


def person_access(*, person) -> list[Access]:
    """Every role ``person`` holds on a knowledge base, each with how it comes to them (owner, direct, a group)."""
    rows = [Access(kb=kb, role=Role.OWNER, owner=True)
            for kb in KnowledgeBase.objects.filter(owner=person).order_by("name", "id")]
    memberships = (Membership.objects.filter(Q(user=person) | Q(group__in=person.groups.all()))
                   .select_related("kb", "group").order_by("kb__name", "kb_id", "id"))
    rows += [Access(kb=m.kb, role=m.role, group=m.group) for m in memberships]
    return rows


def person_groups(*, person) -> list[dict]:
    """``person``'s groups, each with whether they manage it."""
    managed = set(GroupManager.objects.filter(user=person).values_list("group_id", flat=True))
    member = set(person.groups.values_list("id", flat=True))
    groups = Group.objects.filter(pk__in=managed | member).order_by("name", "id")
    return [{"group": g, "member": g.pk in member, "manager": g.pk in managed} for g in groups]
