"""Reads of sources and runs with permissions applied (the rule itself is knowledge.access).

Everyone who reads a KB sees its sources (name, kind, schedule, last run) and their runs; owners and editors
also see a source's settings and manage it. Credentials are never read back by anyone.
"""
from __future__ import annotations

from django.db.models import OuterRef, QuerySet, Subquery

from core.errors import ErrorCode, fail
from knowledge.access import kb_role, kbs_for_user, role_at_least
from knowledge.errors import KnowledgeError
from knowledge.models import KnowledgeBase, Role
from sources.errors import SourcesError
from sources.models import Source, SourceRun


def with_last_run(qs: QuerySet[Source]) -> QuerySet[Source]:
    """Annotate ``last_run_id`` (the newest run), read by ``last_runs``."""
    newest = SourceRun.objects.filter(source=OuterRef("pk")).order_by("-id").values("id")[:1]
    return qs.annotate(last_run_id=Subquery(newest))


def last_runs(sources) -> dict[int, SourceRun]:
    """{source id: its newest run} for sources annotated by ``with_last_run`` (one query)."""
    ids = [s.last_run_id for s in sources if getattr(s, "last_run_id", None)]
    return {r.source_id: r for r in SourceRun.objects.filter(pk__in=ids)}


def source_list(*, kb: KnowledgeBase) -> QuerySet[Source]:
    """The sources of a KB the caller already read (``kb_get_for_user``)."""
    return with_last_run(Source.objects.filter(kb=kb).order_by("id"))


def _check(user, kb: KnowledgeBase, min_role: Role, missing: ErrorCode) -> Role:
    role = kb_role(user=user, kb=kb)
    if role is None:
        raise fail(missing)
    if not role_at_least(role, min_role):
        raise fail(KnowledgeError.ROLE_REQUIRED, role=min_role.label)
    return role


def source_get_for_user(*, user, source_id, min_role: Role = Role.VIEWER) -> Source:
    """The source if ``user`` holds ``min_role`` on its KB; 404 when they cannot read the KB, 403 below the role."""
    try:
        source = Source.objects.select_related("kb").get(pk=int(source_id), kb__in=kbs_for_user(user=user))
    except (Source.DoesNotExist, TypeError, ValueError):
        raise fail(SourcesError.SOURCE_NOT_FOUND) from None
    source.caller_role = _check(user, source.kb, min_role, SourcesError.SOURCE_NOT_FOUND)
    return source


def run_list(*, source: Source) -> QuerySet[SourceRun]:
    return SourceRun.objects.filter(source=source).order_by("-id")


def run_get_for_user(*, user, run_id, min_role: Role = Role.VIEWER) -> SourceRun:
    try:
        run = SourceRun.objects.select_related("source", "source__kb").get(
            pk=int(run_id), source__kb__in=kbs_for_user(user=user))
    except (SourceRun.DoesNotExist, TypeError, ValueError):
        raise fail(SourcesError.SOURCE_RUN_NOT_FOUND) from None
    _check(user, run.source.kb, min_role, SourcesError.SOURCE_RUN_NOT_FOUND)
    return run
