"""Reading the audit log with permissions in the query: staff read every entry, a KB's owners its entries.

An owner's entries are those whose KB they own *now* (``knowledge.access.kbs_for_user`` with the owner
role, directly or through a group, in a subquery), so an owner who loses the role loses the entries with it;
viewers and editors read none, and entries of no KB (sign-ins, tokens, models) are staff's alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q, QuerySet

from audit.models import AuditEntry
from core.audit.actions import Action
from knowledge.access import kbs_for_user
from knowledge.models import KnowledgeBase, Role


def reads_everything(user) -> bool:
    return bool(user.is_authenticated and (user.is_staff or user.is_superuser))


def entries_visible(*, user) -> QuerySet[AuditEntry]:
    """The entries ``user`` may read, newest first."""
    if not user.is_authenticated:
        return AuditEntry.objects.none()
    if reads_everything(user):
        return AuditEntry.objects.all()
    owned = kbs_for_user(user=user, min_role=Role.OWNER).values("pk")
    return AuditEntry.objects.filter(kb_id__in=owned)


def kbs_to_filter_by(*, user) -> QuerySet[KnowledgeBase]:
    """The KBs the page's filter offers: those whose entries ``user`` may read."""
    qs = KnowledgeBase.objects.all() if reads_everything(user) else kbs_for_user(user=user, min_role=Role.OWNER)
    return qs.order_by("name").only("pk", "name")


# Filter by one action ("document.delete") or by every action of an object ("document").
ACTION_GROUPS = sorted({value.split(".", 1)[0] for value in Action.values})
ACTION_FILTERS = [*ACTION_GROUPS, *Action.values]


@dataclass(frozen=True)
class AuditFilters:
    kb: int | None = None
    actor: str | None = None
    action: str | None = None
    since: datetime | None = None
    until: datetime | None = None


def entries_filtered(qs: QuerySet[AuditEntry], filters: AuditFilters) -> QuerySet[AuditEntry]:
    if filters.kb is not None:
        qs = qs.filter(kb_id=filters.kb)
    if filters.actor:
        qs = qs.filter(actor_name=filters.actor)
    if filters.action:
        qs = qs.filter(Q(action=filters.action) if "." in filters.action else Q(action__startswith=filters.action + "."))
    if filters.since is not None:
        qs = qs.filter(at__gte=filters.since)
    if filters.until is not None:
        qs = qs.filter(at__lt=filters.until)
    return qs.order_by("-at", "-id")
