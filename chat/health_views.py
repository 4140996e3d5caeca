"""The KB health page (owners): the page renders the frame, static/chat/health.js reads the health API."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from chat.health import DEFAULT_SINCE_DAYS, SINCE_DAYS, owned_kb
from core.errors import NotFound


@login_required
@ensure_csrf_cookie
def health_page(request: HttpRequest, kb_id: int) -> HttpResponse:
    """What the KB fails at: a 404 for anyone but its owners (a viewer or editor included)."""
    try:
        kb = owned_kb(user=request.user, kb_id=kb_id)
    except NotFound:
        raise Http404("Knowledge base not found.") from None
    return render(request, "chat/health.html", {"kb": kb, "since_days": SINCE_DAYS, "default_since": DEFAULT_SINCE_DAYS})
