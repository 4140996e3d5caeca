"""Reads with permissions applied: which KBs, documents and chunks a user may see."""
from __future__ import annotations

from django.db.models import Exists, OuterRef, Q, QuerySet

from knowledge.errors import NotFound, PermissionDenied
from knowledge.models import ROLE_RANK, Chunk, Document, DocumentStatus, KnowledgeBase, Membership, Role


def _member_q(user) -> Q:
    return Q(user=user) | Q(group__in=user.groups.all())


def kb_list_readable(*, user) -> QuerySet[KnowledgeBase]:
    """KBs the user may read: superusers all; others those they own or hold a role on (directly or by group)."""
    qs = KnowledgeBase.objects.all()
    if not user.is_authenticated:
        return qs.none()
    if user.is_superuser:
        return qs
    member = Membership.objects.filter(_member_q(user), kb=OuterRef("pk"))
    return qs.filter(Q(owner=user) | Exists(member))


def kb_role(*, user, kb: KnowledgeBase) -> Role | None:
    """The strongest role the user holds on ``kb`` (superusers and owners are owners), or None."""
    if not user.is_authenticated:
        return None
    if user.is_superuser or kb.owner_id == user.pk:
        return Role.OWNER
    roles = Membership.objects.filter(_member_q(user), kb=kb).values_list("role", flat=True)
    best = max(roles, key=lambda r: ROLE_RANK[Role(r)], default=None)
    return Role(best) if best else None


def kb_get_for_user(*, user, kb_id, min_role: Role = Role.VIEWER) -> KnowledgeBase:
    """Return the KB if the user holds at least ``min_role``.

    A KB the user cannot read raises NotFound (its existence is not revealed);
    one they can read but not change raises PermissionDenied.
    """
    try:
        kb = KnowledgeBase.objects.get(pk=int(kb_id))
    except (KnowledgeBase.DoesNotExist, TypeError, ValueError):
        raise NotFound("Knowledge base not found.", code="kb_not_found") from None
    role = kb_role(user=user, kb=kb)
    if role is None:
        raise NotFound("Knowledge base not found.", code="kb_not_found")
    if ROLE_RANK[role] < ROLE_RANK[min_role]:
        raise PermissionDenied(f"This action needs the {min_role.value} role on the knowledge base.", code="role_required")
    return kb


def document_visibility_q(*, user, kb: KnowledgeBase, prefix: str = "") -> Q:
    """A Q on Document (or, with ``prefix='document__'``, on Chunk) for group-restricted documents.

    Editors and owners see every document; viewers see unrestricted ones and
    those restricted to a group they belong to.
    """
    role = kb_role(user=user, kb=kb)
    if role is not None and ROLE_RANK[role] >= ROLE_RANK[Role.EDITOR]:
        return Q()
    no_restriction = Q(**{f"{prefix}restricted_to_groups__isnull": True})
    in_group = Q(**{f"{prefix}restricted_to_groups__in": user.groups.all()})
    return no_restriction | in_group


def document_list(*, user, kb: KnowledgeBase) -> QuerySet[Document]:
    return (
        Document.objects.filter(kb=kb)
        .filter(document_visibility_q(user=user, kb=kb))
        .distinct()
        .order_by("-id")
    )


def chunk_list(*, user, kb: KnowledgeBase) -> QuerySet[Chunk]:
    """Chunks of the KB's serving (ready) documents that the user may read."""
    return (
        Chunk.objects.filter(kb=kb, document__status=DocumentStatus.READY)
        .filter(document_visibility_q(user=user, kb=kb, prefix="document__"))
        .select_related("document")
        .distinct()
        .order_by("document_id", "ordinal")
    )
