"""The console's audit log page (``/audit/``) and its CSV export: filters by person, KB, action and time, paged.

Staff read every entry, a KB's owners that KB's entries (``audit.selectors``); anyone else signed in sees an
empty log. The export streams exactly the filtered view (``audit.export``).
"""
from __future__ import annotations

from datetime import datetime, time, timedelta

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone, translation
from django.utils.dateparse import parse_date

from audit.export import csv_stream
from audit.inputs import filters_from
from audit.presenting import change_lines
from audit.selectors import ACTION_GROUPS, entries_filtered, entries_visible, kbs_to_filter_by, reads_everything
from core.audit.actions import Action
from core.errors import ApplicationError

PER_PAGE = 50


def _day_bounds(params) -> dict[str, str]:
    """The page's date fields (YYYY-MM-DD, local days) as the API's times: ``until`` is the end of its day."""
    out = {k: v for k, v in params.items() if k in ("kb", "actor", "action")}
    for name, shift in (("since", 0), ("until", 1)):
        raw = (params.get(name) or "").strip()
        day = parse_date(raw) if len(raw) == 10 else None
        if raw and day is None:
            out[name] = raw  # not a date: refused by the filters with the API's message
        elif day is not None:
            start = timezone.make_aware(datetime.combine(day + timedelta(days=shift), time.min))
            out[name] = start.isoformat()
    return out


def _filtered(request: HttpRequest):
    """(entries, error text or "", the form's values) for the request's query string."""
    values = {k: request.GET.get(k, "") for k in ("kb", "actor", "action", "since", "until")}
    try:
        filters = filters_from(_day_bounds(values))
    except ApplicationError as error:
        return entries_visible(user=request.user).none(), error.message, values
    return entries_filtered(entries_visible(user=request.user), filters), "", values


@login_required
def audit_page(request: HttpRequest) -> HttpResponse:
    entries, error, values = _filtered(request)
    # The person by their name (templates/audit/audit.html): one query for the page's actors.
    page = Paginator(entries.select_related("actor"), PER_PAGE).get_page(request.GET.get("page"))
    for entry in page:
        entry.change_lines = change_lines(entry.changes)
        entry.action_label = Action(entry.action).label if entry.action in Action.values else entry.action
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "audit/audit.html", {
        "page": page, "error": error, "values": values, "query": query.urlencode(),
        "kbs": kbs_to_filter_by(user=request.user), "actions": Action.choices, "action_groups": ACTION_GROUPS,
        "everything": reads_everything(request.user),
    }, status=400 if error else 200)


@login_required
def audit_export(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    entries, error, _values = _filtered(request)
    if error:
        return HttpResponse(error, status=400, content_type="text/plain; charset=utf-8")
    response = StreamingHttpResponse(csv_stream(entries, translation.get_language()), content_type="text/csv; charset=utf-8")
    stamp = timezone.localtime().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="zhiku-audit-{stamp}.csv"'
    return response
