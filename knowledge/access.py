"""The access rule of knowledge bases, stated once.

Roles: a user holds on a KB the strongest of the roles given to them directly
or to one of their groups; the KB's owner and superusers are owners. Ranks:
owner > editor > viewer.

Documents: a user reads a document of a KB they hold a role on unless it is
restricted to groups (``Document.restricted_to_groups``) and they are in none
of them; editors, owners and superusers read every document.

Everything else (selectors, API views, admin, search, the retrieval stores)
asks this module, so the rule cannot drift between an ORM filter and the SQL
of the vector search. The rule has two forms: per user (ORM ``Q`` objects,
across KBs) and per ``AccessScope`` (what a search carries to the stores:
a ``Q`` and the same condition as raw SQL); tests/knowledge/test_access.py
checks every form agrees on a matrix of users, roles, groups and restrictions.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from django.contrib.auth import get_user_model
from django.db.models import Case, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery, Value, When

from knowledge.models import Document, KnowledgeBase, Membership, Role
from knowledge.retrieval.protocols import AccessScope

ROLE_RANK = {Role.VIEWER: 1, Role.EDITOR: 2, Role.OWNER: 3}

Restriction = Document.restricted_to_groups.through


# --- roles --------------------------------------------------------------------

def role_at_least(role: Role | str | None, min_role: Role) -> bool:
    """Whether ``role`` (None: no role) ranks at or above ``min_role``."""
    return role is not None and ROLE_RANK[Role(role)] >= ROLE_RANK[min_role]


def roles_at_least(min_role: Role) -> list[Role]:
    return [r for r in Role if role_at_least(r, min_role)]


def _held_by(user) -> Q:
    """Memberships (a Q on Membership) that apply to ``user``: their own or one of their groups'."""
    return Q(user=user) | Q(group__in=user.groups.all())


def kb_role(*, user, kb: KnowledgeBase) -> Role | None:
    """The strongest role ``user`` holds on ``kb`` (superusers and the owner are owners), or None."""
    if not user.is_authenticated:
        return None
    if user.is_superuser or kb.owner_id == user.pk:
        return Role.OWNER
    roles = Membership.objects.filter(_held_by(user), kb=kb).values_list("role", flat=True)
    return max((Role(r) for r in roles), key=ROLE_RANK.__getitem__, default=None)


def has_role(*, user, kb: KnowledgeBase, min_role: Role) -> bool:
    return role_at_least(kb_role(user=user, kb=kb), min_role)


def kbs_for_user(*, user, min_role: Role = Role.VIEWER) -> QuerySet[KnowledgeBase]:
    """The KBs on which ``user`` holds at least ``min_role`` (one query, no duplicates)."""
    qs = KnowledgeBase.objects.all()
    if not user.is_authenticated:
        return qs.none()
    if user.is_superuser:
        return qs
    held = Membership.objects.filter(_held_by(user), kb=OuterRef("pk"), role__in=roles_at_least(min_role))
    return qs.filter(Q(owner=user) | Exists(held))


def with_caller_role(qs: QuerySet[KnowledgeBase], *, user) -> QuerySet[KnowledgeBase]:
    """Annotate ``member_rank``, the best rank the user's memberships give, read back by ``caller_role``."""
    rank = Case(*(When(role=r, then=Value(n)) for r, n in ROLE_RANK.items()), output_field=IntegerField())
    best = (Membership.objects.filter(_held_by(user), kb=OuterRef("pk"))
            .annotate(rank=rank).order_by("-rank").values("rank")[:1])
    return qs.annotate(member_rank=Subquery(best, output_field=IntegerField()))


def caller_role(kb: KnowledgeBase, *, user) -> Role | None:
    """``kb_role`` of a KB annotated by ``with_caller_role``, without another query."""
    if user.is_superuser or kb.owner_id == user.pk:
        return Role.OWNER
    rank = cast(Any, kb).member_rank  # the query's annotation (with_caller_role, kbs_with_caller_access)
    return next((r for r, n in ROLE_RANK.items() if n == rank), None)


# --- documents: per user --------------------------------------------------------

def _restriction_q(prefix: str, groups) -> Q:
    """Unrestricted, or restricted to one of ``groups`` (a list of ids or a Group queryset).

    Correlated EXISTS rather than joins, so no filter using it needs ``distinct()``
    and it can be negated (``exclude``) safely.
    """
    document = OuterRef(f"{prefix}id")
    restricted = Restriction.objects.filter(document_id=document)
    return ~Exists(restricted) | Exists(restricted.filter(group_id__in=groups))


def documents_readable_q(*, user, prefix: str = "") -> Q:
    """A Q on Document (or on Chunk with ``prefix='document__'``) for what ``user`` may read, in any KB."""
    if user.is_authenticated and user.is_superuser:
        return Q()
    readable_kbs = kbs_for_user(user=user).values("pk")
    full_access_kbs = kbs_for_user(user=user, min_role=Role.EDITOR).values("pk")
    return Q(**{f"{prefix}kb__in": readable_kbs}) & (
        Q(**{f"{prefix}kb__in": full_access_kbs}) | _restriction_q(prefix, user.groups.values("pk"))
    )


# --- documents: per search scope (what the stores see) ------------------------------

def scope_for(*, user, kbs: Sequence[KnowledgeBase]) -> AccessScope:
    """What a search of ``kbs`` carries to the stores; the caller's access to each KB is checked already."""
    full = frozenset(kb.pk for kb in kbs if has_role(user=user, kb=kb, min_role=Role.EDITOR))
    return AccessScope(user_id=user.pk, group_ids=tuple(user.groups.values_list("id", flat=True)), full_access_kb_ids=full)


def _caller_access_sql() -> str:
    """The statement of ``kbs_with_caller_access``: the text is the same for every caller (kept by the caller)."""
    kb, membership = KnowledgeBase._meta.db_table, Membership._meta.db_table
    user_groups = get_user_model().groups.through._meta.db_table  # the owner's model: settings.AUTH_USER_MODEL
    rank = " ".join(f"WHEN '{r.value}' THEN {n}" for r, n in ROLE_RANK.items())
    groups = f"SELECT g.group_id FROM {user_groups} g WHERE g.user_id = %(user)s"
    return (f"SELECT kb.*, (SELECT max(CASE m.role {rank} END) FROM {membership} m WHERE m.kb_id = kb.id"
            f" AND (m.user_id = %(user)s OR m.group_id IN ({groups}))) AS member_rank,"
            f" ARRAY({groups} ORDER BY g.group_id) AS caller_group_ids"
            f" FROM {kb} kb WHERE kb.id = ANY(%(ids)s)")


_CALLER_ACCESS_SQL: str | None = None


def kbs_with_caller_access(*, user, kb_ids: Sequence[int]) -> list[KnowledgeBase]:
    """The KBs of ``kb_ids`` that exist, each with ``member_rank`` (as ``with_caller_role``, read back by
    ``caller_role``) and ``caller_group_ids``, the caller's groups (read back by ``scope_of_annotated``), in one
    raw statement: a search's KBs, roles and scope without building a queryset per search."""
    global _CALLER_ACCESS_SQL
    if _CALLER_ACCESS_SQL is None:
        _CALLER_ACCESS_SQL = _caller_access_sql()
    return list(KnowledgeBase.objects.raw(_CALLER_ACCESS_SQL, {"user": user.pk, "ids": list(kb_ids)}))


def scope_of_annotated(*, user, kbs: Sequence[KnowledgeBase]) -> AccessScope:
    """``scope_for`` of KBs read by ``kbs_with_caller_access``, without another query."""
    groups = tuple(kbs[0].caller_group_ids) if kbs else tuple(user.groups.values_list("id", flat=True))
    full = frozenset(kb.pk for kb in kbs if role_at_least(caller_role(kb, user=user), Role.EDITOR))
    return AccessScope(user_id=user.pk, group_ids=groups, full_access_kb_ids=full)


def scope_documents_q(scope: AccessScope, kb_id: int, prefix: str = "document__") -> Q:
    """``documents_readable_q`` for a KB the scope's user reads, from the scope alone (Chunk by default)."""
    if kb_id in scope.full_access_kb_ids:
        return Q()
    return _restriction_q(prefix, list(scope.group_ids))


def _restriction_sql(alias: str) -> str:
    """``_restriction_q`` as SQL on the document table under ``alias``; one parameter, the group ids."""
    table = Restriction._meta.db_table
    return (f"(NOT EXISTS (SELECT 1 FROM {table} r WHERE r.document_id = {alias}.id)"
            f" OR EXISTS (SELECT 1 FROM {table} r WHERE r.document_id = {alias}.id AND r.group_id = ANY(%s)))")


def scope_documents_sql(scope: AccessScope, kb_id: int, alias: str = "d") -> tuple[str, list]:
    """``scope_documents_q`` as SQL on the document table under ``alias``, and its parameters."""
    if kb_id in scope.full_access_kb_ids:
        return "TRUE", []
    return _restriction_sql(alias), [list(scope.group_ids)]


def scope_chunks_sql(scope: AccessScope, *, chunk: str = "c", document: str = "d") -> tuple[str, list]:
    """``scope_documents_sql`` for chunks of any KB the scope's user reads, in one condition: a chunk of a KB
    where the scope has full access, or of a document the scope's groups may read (the SQL text is the same
    for every scope, so a caller can keep it)."""
    return (f"({chunk}.kb_id = ANY(%s) OR {_restriction_sql(document)})",
            [sorted(scope.full_access_kb_ids), list(scope.group_ids)])
