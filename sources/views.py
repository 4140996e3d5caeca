"""The console's page of one source: its settings (editors change them), actions, and its runs with their errors.

The page renders what it reads; changes go to the REST API (sources/api.py) from static/sources/sources.js.
"""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from core.errors import NotFound
from core.errors import PermissionDenied as AppPermissionDenied
from knowledge.access import role_at_least
from knowledge.models import Role
from sources import selectors
from sources.catalog import kinds
from sources.console import RUN_STATUS_CLASSES, kind_form, kind_label, schedule_text
from sources.models import Schedule

RUNS_PER_PAGE = 20


@login_required
@ensure_csrf_cookie
def source_page(request: HttpRequest, kb_id: int, source_id: int) -> HttpResponse:
    try:
        source = selectors.source_get_for_user(user=request.user, source_id=source_id)
    except NotFound:
        raise Http404("Source not found.") from None
    except AppPermissionDenied as exc:
        raise PermissionDenied(exc.message) from None
    if source.kb_id != kb_id:
        raise Http404("Source not found.")
    can_edit = role_at_least(source.caller_role, Role.EDITOR)
    info = next((k for k in kinds() if k.kind == source.kind), None)
    page = Paginator(selectors.run_list(source=source), RUNS_PER_PAGE).get_page(request.GET.get("page"))
    for run in page:
        run.css = RUN_STATUS_CLASSES.get(run.status, "")
    return render(request, "sources/source.html", {
        "kb": source.kb, "source": source, "can_edit": can_edit, "kind_label": kind_label(source.kind),
        "schedule_text": schedule_text(source), "schedules": Schedule.choices, "page": page,
        "form": kind_form(info, source.settings) if (can_edit and info is not None) else None,
    })
